package trace

import (
	"context"
	"sync/atomic"

	"github.com/buzzrelay/buzz/tenant"
)

// Guard makes a seam's tracing load-bearing: a seam arms a Guard on entry,
// emits its step through it (Guard is itself a Tracer that forwards), and
// releases it on every exit path, typically with defer. Releasing a Guard
// through which nothing was emitted records an impl_bug step of kind
// "unemitted:<seam>", which the checker reports as a CoverageBreach.
//
//	g := trace.Arm(tr, st, "ingest")
//	defer g.Release(ctx)
//	…
//	g.WriteInsert(ctx, st, ev.ID, channel, ch.Community)
//
// A Guard may be shared by the goroutines of one seam. Only seams that arm a
// Guard are covered: a new tenant seam that does not arm one leaves the
// harness blind, which code review, not the harness, must catch.
type Guard struct {
	t        Tracer
	st       State
	seam     string
	emitted  atomic.Bool
	released atomic.Bool
}

var _ Tracer = (*Guard)(nil)

// Arm returns a Guard for seam over t, recording st if it is released
// without an emission. For a nil or Noop tracer — production — it returns
// nil without allocating: a nil *Guard is valid, and all its methods do
// nothing.
func Arm(t Tracer, st State, seam string) *Guard {
	if t == nil {
		return nil
	}
	if _, ok := t.(Noop); ok {
		return nil
	}
	return &Guard{t: t, st: st, seam: seam}
}

// Release records the coverage breach if nothing was emitted. Only the first
// call has an effect.
func (g *Guard) Release(ctx context.Context) {
	if g == nil || g.released.Swap(true) || g.emitted.Load() {
		return
	}
	g.t.ImplBug(ctx, g.st, "unemitted:"+g.seam)
}

// Emitted reports whether a step went through g.
// A nil Guard reports false.
func (g *Guard) Emitted() bool { return g != nil && g.emitted.Load() }

func (g *Guard) WriteInsert(ctx context.Context, st State, msgID, channel string, claimed tenant.CommunityID) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.WriteInsert(ctx, st, msgID, channel, claimed)
}

func (g *Guard) WriteInsertGlobal(ctx context.Context, st State, msgID string) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.WriteInsertGlobal(ctx, st, msgID)
}

func (g *Guard) AcceptEphemeral(ctx context.Context, st State) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.AcceptEphemeral(ctx, st)
}

func (g *Guard) WriteDuplicate(ctx context.Context, st State, msgID string) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.WriteDuplicate(ctx, st, msgID)
}

func (g *Guard) AuthCheck(ctx context.Context, st State, channel string, claimed tenant.CommunityID, allow bool) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.AuthCheck(ctx, st, channel, claimed, allow)
}

func (g *Guard) ReadMessageRows(ctx context.Context, st State, channel string, rows []tenant.CommunityID) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.ReadMessageRows(ctx, st, channel, rows)
}

func (g *Guard) ReadByIDRows(ctx context.Context, st State, rows []tenant.CommunityID) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.ReadByIDRows(ctx, st, rows)
}

func (g *Guard) ReadHostFeedRows(ctx context.Context, st State, rows []tenant.CommunityID) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.ReadHostFeedRows(ctx, st, rows)
}

func (g *Guard) SanitizedError(ctx context.Context, st State, reason Reason) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.SanitizedError(ctx, st, reason)
}

func (g *Guard) ImplBug(ctx context.Context, st State, kind string) {
	if g == nil {
		return
	}
	g.emitted.Store(true)
	g.t.ImplBug(ctx, st, kind)
}
