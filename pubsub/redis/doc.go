// Package redis is a pubsub.Broker that spans many relay processes ("pods")
// through Redis PUB/SUB, with per-community topics and local-echo
// de-duplication, plus the per-community control bus, presence and the
// shared Redis client other Redis-backed guards reuse.
//
// # Topics
//
// Every key and channel starts with a namespace (default "buzz"):
//
//	{ns}:{community}:channel:{channel_id}   events of one channel
//	{ns}:{community}:global                 community-wide events (Topic.Channel == "")
//	{ns}:{community}:control                control messages (package control)
//	{ns}:{community}:presence:{pubkey}      presence status (SET … EX)
//
// Publish picks a message's topic with a router (WithTopicFunc):
// CommunityTopic (the default) sends everything to the community-wide topic;
// HTagTopic sends channel events to their channel's topic. Whatever the
// router, pods must retain the topics it picks for their subscriptions.
//
// A pod SUBSCRIBEs (never PSUBSCRIBE) to exactly the topics it retains:
// Retain and Release count local interest, the first Retain subscribes and
// waits for Redis to confirm it, the last Release unsubscribes after a
// debounce (500 ms by default) so churn does not thrash Redis. A
// community's control topic is subscribed while any of its topics is
// retained, or while RetainCommunity holds it.
//
// # Exactly once
//
// Publish hands the message to local listeners at once, then marks
// (community, event id) in a bounded ristretto cache with a TTL (60 s) and
// PUBLISHes an envelope {community, event id, raw event}. When the
// publishing pod receives its own message back from Redis it finds the mark,
// drops the message and clears the mark; every other pod delivers it. If the
// PUBLISH fails the mark is removed and the error returned: the relay has
// already stored the event, so REQ still serves it. The community is part of
// the mark's key: the same event id in two communities is two events.
//
// # Trust
//
// Redis is a trusted internal network shared only by relay pods. The
// receiving pod parses the event with nostr.ParseEvent but does not verify
// its id or signature again: the origin pod verified it before storing it.
// It does check that the community in the envelope equals the community of
// the topic the message arrived on and drops (and logs) any message where
// they differ, so a misrouted message can never reach another tenant.
//
// # Losing Redis
//
// When the subscription connection drops, the broker marks itself unhealthy
// (Healthy, Ready), reconnects with exponential backoff and resubscribes to
// every retained topic. While unhealthy, Publish still delivers locally but
// returns ErrUnavailable at once instead of waiting on Redis; events
// published meanwhile on any pod are stored and served by REQ. Redis PUB/SUB
// is at-most-once: messages published while a pod is disconnected are not
// replayed to it.
//
// # Dependencies
//
// It depends on pubsub, pubsub/control, nostr, tenant and the Redis client;
// it must not import the relay (package buzz), a store or ingest.
package redis
