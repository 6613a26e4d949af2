// Package store defines what buzz needs from event storage, and the
// semantics every backend must implement identically. The conformance suite in
// store/storetest pins those semantics; store/embedded (the embedded default)
// and store/postgres (production) both pass it unchanged.
//
// Every call is scoped by a tenant.CommunityID: a backend never returns, counts,
// replaces or deletes an event of another community, and the same event id in
// two communities is two independent events.
//
// Package store owns the persistence contract and nothing else: the channel
// domain's rules are package channel's, admission is package ingest's. It
// depends on audit, channel, nostr and tenant; it must not import a backend,
// pubsub, ingest or the relay (package buzz).
package store

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Errors returned by Save. Callers map them to NIP-01 OK messages.
var (
	// ErrDuplicate: this community already holds the event (OK true, "duplicate:").
	ErrDuplicate = errors.New("store: duplicate event")
	// ErrSuperseded: a replaceable or addressable event arrived that loses to
	// the version already held (older created_at, or equal created_at and a
	// higher id). Nothing was written.
	ErrSuperseded = errors.New("store: a newer version of this event is already stored")
	// ErrDeleted: the event was deleted by its author (NIP-09, by id or by a
	// coordinate watermark at or after its created_at) and cannot be re-added.
	ErrDeleted = errors.New("store: event was deleted by its author")
	// ErrReactionHeld: the event is a reaction (kind 7) and the community
	// holds a reaction by the same author to the same event with the same
	// emoji (the slot of ReactionKey). Returned by a store that keeps the
	// slots with the events, atomically with the write (the embedded
	// store); a store implementing ReactionStore leaves them to the relay.
	ErrReactionHeld = errors.New("store: a reaction by this author with this emoji to this event is stored")

	// ErrInUse reports that an embedded store's files are held by another
	// process (or another open store in this one): one process at a time
	// opens an embedded store.
	ErrInUse = errors.New("store: the data directory is in use by another process")
)

// IsOutcome reports whether err is one of Save's per-event outcomes
// (ErrDuplicate, ErrSuperseded, ErrDeleted, ErrReactionHeld): the event
// was judged and nothing was written for it, and the store is fine. Any
// other non-nil error is a failure of the store or of the request.
func IsOutcome(err error) bool {
	return errors.Is(err, ErrDuplicate) || errors.Is(err, ErrSuperseded) ||
		errors.Is(err, ErrDeleted) || errors.Is(err, ErrReactionHeld)
}

// Settle finishes a save made in two steps (a SaveStaged of the embedded
// store and its engine): it waits for durable, when not nil, and returns
// what Save returns — durable's failure, else err. It is how such a store's
// Save is its SaveStaged: return store.Settle(s.SaveStaged(ctx, c, ev)).
func Settle(durable func() error, err error) error {
	if durable != nil {
		if serr := durable(); serr != nil {
			return serr
		}
	}
	return err
}

// Record is one stored event as a query returns it.
type Record struct {
	// ID is the lowercase hex event id. A backend may share its bytes
	// with Raw (the embedded store does: Raw begins with the id), so
	// keeping the ID keeps Raw's memory.
	ID        string
	CreatedAt int64
	// Raw is the event's JSON object exactly as nostr.Event.AppendJSON wrote
	// it at ingest: content and tags come back byte-for-byte. It is read
	// only: a backend may hand the same bytes to several queries (the
	// embedded store's event cache does), and they stay valid after the
	// query (a relay queues them to its subscribers as they are).
	Raw []byte
	// Community is the community the row belongs to. Backends return rows
	// of the queried community only and set it to that community; the
	// relay labels what it sends with it (isolation tracing).
	Community tenant.CommunityID
}

// EventStore is the storage contract of a relay.
//
// Semantics (pinned by storetest):
//   - Save is idempotent per (community, id): a repeat returns ErrDuplicate.
//   - Replaceable kinds (0, 3, 10000–19999) keep one live event per
//     (community, kind, pubkey); addressable kinds (30000–39999) one per
//     (community, kind, pubkey, d), where a missing d equals "". The newest
//     created_at wins; on equal created_at the lowest id wins; a losing
//     incoming event returns ErrSuperseded and changes nothing. Replacement is
//     atomic even across processes sharing the backend.
//   - A kind 5 deletion request is stored and, atomically with it, deletes
//     the events it names that have the same author: by "e" (event id) and by
//     "a" (kind:pubkey:d coordinate, removing versions with created_at ≤ the
//     request's). Deleted ids and coordinate watermarks are durable: a later
//     Save of a deleted id, or of a coordinate version with created_at ≤ the
//     watermark, returns ErrDeleted. Deletion requests aimed at deletion
//     requests have no effect. Ephemeral kinds are never passed to Save.
//   - Events carrying a NIP-40 expiration at or before "now" are not
//     returned by Query or Count; DeleteExpired removes them.
//   - Query yields events newest first (created_at DESC, then id ASC), at
//     most f.Limit of them when f.LimitSet (callers clamp the limit), and
//     honours every Filter field exactly as search.Matches does.
//   - A filter with Search (NIP-50) matches the live events of searchable
//     kinds whose content holds every word and phrase of the query, with
//     package search's tokenizer; Query yields them by relevance instead
//     (most relevant first, ties newest first: CompareSearchHits), the
//     limit applied after ranking. Relevance uses the event alone, never statistics of other
//     events. Gift wraps (kind 1059) never match a search.
//   - Count returns the number of distinct live events matching any of the
//     filters (limits are ignored).
//   - Query and Count see every event of the community, channel events
//     included: they are for trusted callers (tools, tests). A relay serving
//     clients reads through ChannelStore.QueryScoped and CountScoped, which
//     return community-wide events plus only the channels of a Scope.
//   - Save records the channel an event names with its "h" tag
//     (EventChannel); an event whose h tags are malformed is refused with
//     ErrInvalidChannelTag. Save does not check that the channel exists:
//     callers admitting client events resolve it first.
type EventStore interface {
	Save(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error
	Query(ctx context.Context, c tenant.CommunityID, f nostr.Filter) iter.Seq2[Record, error]
	Count(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter) (int64, error)
	DeleteExpired(ctx context.Context, now time.Time) (int64, error)
	Close() error
}

// Communities is the community registry a backend keeps beside its events.
// It is a tenant.Directory, so a relay resolves hosts through it.
type Communities interface {
	tenant.Directory
	// EnsureCommunity maps a normalized host to a community, creating the
	// community if the host is unmapped. It is idempotent and safe to call
	// concurrently from several processes: every caller gets the same id.
	EnsureCommunity(ctx context.Context, normalizedHost string) (id tenant.CommunityID, created bool, err error)
}

// Backend is a complete storage backend: events plus the community registry.
type Backend interface {
	EventStore
	Communities
}
