// Package pubsub carries live events from the process that accepted them to
// every process with matching subscribers, and matches them against local
// subscriptions.
//
// A Broker moves Messages between processes (Local keeps them in this one;
// pubsub/redis spans many pods). An Index holds this process's live
// subscriptions per community, with inverted indexes so that matching an
// event does not scan every subscription.
//
// Package pubsub owns live delivery within a process and the Broker contract
// across processes: Local, Index and Inflight (the stored-to-live handoff).
// It depends on nostr, search and tenant; it must not import a Redis client
// (pubsub/redis implements Broker), a store, ingest or the relay.
package pubsub

import (
	"context"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Message is one live event of one community.
type Message struct {
	Community tenant.CommunityID
	Event     *nostr.Event
	// Raw is the event's wire JSON (nostr.Event.AppendJSON), shared read-only
	// by every recipient: nothing modifies it once published, so a
	// recipient may keep it (a relay queues it to each subscriber as is).
	Raw []byte
}

// Topic names the stream a subscriber needs: a community's community-wide
// events, or one of its channels.
type Topic struct {
	Community tenant.CommunityID
	Channel   string // "" = community-wide
}

// Broker delivers every published Message exactly once to each listener in
// every process that retains the message's topic, including the publishing
// process.
type Broker interface {
	// Publish hands msg to local listeners at once and to other processes.
	Publish(ctx context.Context, msg Message) error
	// Listen registers fn to receive every delivered message; the returned
	// func unregisters it. fn must not block.
	Listen(fn func(Message)) (stop func())
	// Retain and Release count this process's interest in a topic; a
	// distributed broker receives a topic only while it is retained.
	Retain(t Topic)
	Release(t Topic)
	Close() error
}
