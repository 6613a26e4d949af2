// Package nip77 is NIP-77 negentropy set reconciliation for buzz: the
// NEG-OPEN, NEG-MSG, NEG-CLOSE and NEG-ERR messages, the server side of a
// reconciliation over a set of (created_at, id) items, and the client side
// that drives a reconciliation over any message transport.
//
// The negentropy protocol itself (version 1: ranges, fingerprints, id
// lists, frame size limits) is github.com/nbd-wtf/go-nostr/nip77/negentropy;
// this package bounds and validates what reaches it, and turns a panic of
// the library on hostile input into an error.
//
// It knows nothing of communities, channels or stores: the relay decides
// which items a reader may reconcile over (the same scoped read as a REQ)
// and hands them here. It must not import the relay, the stores or the
// ingest pipeline.
package nip77
