package store

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// Authority marks a write as the effect of an authority event (see package
// ingest's authority rule): the event whose effect it is, the community it
// acts in, and until when the backend must remember that it was applied.
//
// Semantics (pinned by storetest):
//   - The first write that commits with a context carrying the mark
//     (WithAuthority) records (Community, Event) in the same transaction
//     as its change; writes later made with that same context belong to
//     the same application and pass.
//   - A write made with a mark already recorded — by an earlier context
//     carrying the same (Community, Event), in any process sharing the
//     store — writes nothing and returns ErrDuplicate.
//   - A write that refuses (returns a sentinel or an internal error, or a
//     verdict such as channel.ErrNotAllowed) records nothing.
//   - Marks are per community: the same event applied in two communities
//     is two marks.
//   - DeleteExpired removes marks whose Until is before its now; a mark is
//     needed only as long as the event could be accepted again (the
//     authority window bounds its age).
type Authority struct {
	Community tenant.CommunityID
	// Event is the event's id (64 lowercase hex characters).
	Event string
	// Until is when the mark may be forgotten.
	Until time.Time
}

type authorityKey struct{}

// authorityMark is the mark a context carries, and whether a write with
// that context has recorded it.
type authorityMark struct {
	a        Authority
	recorded atomic.Bool
}

// WithAuthority returns a context whose writes are the effect of
// authority event a (see Authority).
func WithAuthority(ctx context.Context, a Authority) context.Context {
	return context.WithValue(ctx, authorityKey{}, &authorityMark{a: a})
}

// PendingAuthority returns the mark ctx carries, when no write made with
// ctx has recorded it yet. Backends call it at the start of each write.
func PendingAuthority(ctx context.Context) (Authority, bool) {
	m, _ := ctx.Value(authorityKey{}).(*authorityMark)
	if m == nil || m.recorded.Load() {
		return Authority{}, false
	}
	return m.a, true
}

// AuthorityRecorded tells ctx's mark that a write has committed it: later
// writes with ctx pass. Backends call it after the commit that recorded it.
func AuthorityRecorded(ctx context.Context) {
	if m, _ := ctx.Value(authorityKey{}).(*authorityMark); m != nil {
		m.recorded.Store(true)
	}
}
