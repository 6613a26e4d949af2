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
// # Decisions where NIP-01 leaves room
//
//   - Strings must be valid UTF-8, and a \u escape of a lone UTF-16
//     surrogate (\ud800 without its low half) is refused. encoding/json would
//     replace either with U+FFFD, silently changing the bytes the id is
//     computed over; refusing keeps "what was signed" and "what is stored"
//     the same.
//   - Empty tags ([] inside "tags") are accepted: NIP-01 does not forbid
//     them and they serialize unambiguously. Tag helpers skip them.
//   - Numbers that must be integers (created_at, kind, since, until, limit,
//     kinds) refuse fractions and exponents, even 1.0 and 1e3, and negative
//     values including -0.
//   - Duplicate known fields in an event or filter are refused: which copy
//     wins differs between JSON libraries, so the id could be checked over
//     one value and stored with another.
//   - Filters refuse unknown fields instead of ignoring a constraint and
//     returning events the client did not ask for; "search" (NIP-50) is
//     kept as a string, parsed by package search where filters are used
//     (package nostr does not import it). Filter ids and authors must be full
//     64-character ids (no prefixes).
//   - REQ and COUNT need at least one filter. ParseClientMessage reports
//     problems found after the label as an *EnvelopeError carrying the
//     subscription id (REQ, COUNT, CLOSE) or the event id (EVENT, AUTH) when
//     those could be read, so a relay can answer with CLOSED or OK.
//
// # Output
//
// All writers escape strings the way the NIP-01 id serialization does (see
// AppendString): only '"', '\\' and control characters are escaped, never
// HTML characters or non-ASCII text, so an event written by AppendJSON keeps
// every byte the client signed, and an event received in that canonical
// form is written back byte for byte. The Append* functions add to a caller
// buffer and allocate only when it must grow.
//
// # Signatures
//
// Verifier checks ids and BIP-340 signatures and caches lifted public keys.
// By default it verifies in pure Go, on the secp256k1 field arithmetic and
// point types of github.com/consensys/gnark-crypto (with the scalars mod n
// of github.com/decred/dcrd/dcrec/secp256k1/v4, the package btcec/v2
// wraps), so a build needs no C compiler. With -tags libsecp256k1 it verifies with
// the system's libsecp256k1 (Debian: libsecp256k1-dev), linked through cgo
// and found with pkg-config. VerifyBackend names the backend compiled in.
//
// The package has no I/O and no package-level mutable state.
//
// # Dependencies
//
// Package nostr knows no communities: it depends only on search (NIP-50
// queries in filters) and must not import tenant, store or the relay. Every
// kind number Buzz uses is declared in kinds.go.
package nostr
