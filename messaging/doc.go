// Package messaging holds the rules of Buzz's messaging kinds that an event
// carries by itself: the channel message kinds 40002–40008 (message, edit,
// pinned, bookmarked, scheduled, reminder, diff), the forum kinds
// 45001–45003 (post, vote, comment), reactions (kind 7, NIP-25),
// profile metadata (kind 0) and the kind allow-list of a Buzz-compatible
// relay. It speaks Buzz's wire format: the kind numbers, tags, limits and
// refusal texts are Buzz's, so a Buzz client works unchanged.
//
// What needs the store (an edit's author, a reaction's target and its
// uniqueness) is judged by package ingest with the helpers here; this
// package decides nothing that needs a lookup. It imports only package
// nostr: it must not import the relay (package buzz), package channel, a
// store, ingest or pubsub.
package messaging
