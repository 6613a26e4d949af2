// Package nostr holds the protocol primitives buzz is built on: events, tags,
// filters, kinds and the NIP-01/42/45 envelopes, with strict decoding, the
// canonical serialization that defines an event id, and BIP-340 signature
// verification.
//
// Decoding is strict: anything that is not exactly the shape NIP-01 describes
// is refused with an error whose text starts with "invalid: ", ready to be
// sent to a client in an OK or CLOSED message. Unknown extra fields of an
// event object are ignored.
//
// The package has no I/O and no package-level mutable state.
package nostr
