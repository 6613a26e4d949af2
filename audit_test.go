package buzz

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/store"
)

// TestRateLimitRefusalsAudited: refused EVENTs are recorded in the
// community's chain, coalesced per author: the entry counts the refusals.
func TestRateLimitRefusalsAudited(t *testing.T) {
	l, err := ratelimit.NewMemory(ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassEvent: {Limit: 1, Window: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTestRelay(t, WithRateLimiter(l))
	c := tr.dial(t)
	s, quiet := newSigner(t), newSigner(t)
	c.mustAccept(s.event(1, now(), "one"))
	for i := range 3 {
		ok := c.publish(s.event(1, now(), "over"+string(rune('a'+i))))
		mustPrefix(t, "over quota", ok.Message, "rate-limited: ")
	}
	c.mustAccept(quiet.event(1, now(), "within quota"))

	// Refusals in one flush interval share an entry; the three may straddle
	// two intervals, so count across entries.
	type detail struct {
		Refused int    `json:"refused"`
		Kind    int    `json:"kind"`
		Reason  string `json:"reason"`
	}
	refused := func() int {
		es, err := tr.store.AuditEntries(context.Background(), tr.tc.Community(), 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range es {
			var d detail
			if e.Action != audit.RateLimited || e.Actor != s.pub() || json.Unmarshal(e.Detail, &d) != nil || d.Kind != 1 {
				t.Fatalf("entry %+v", e)
			}
			mustPrefix(t, "reason", d.Reason, "rate-limited: ")
			n += d.Refused
		}
		return n
	}
	waitFor(t, "three audited refusals", func() bool { return refused() >= 3 })
	if n := refused(); n != 3 {
		t.Fatalf("%d refusals audited, want 3", n)
	}
	if rep, err := store.VerifyAudit(context.Background(), tr.store, tr.tc.Community()); err != nil || rep.BrokenSeq != 0 {
		t.Fatalf("verify %+v %v", rep, err)
	}
}

// TestRefusalTalliesBounded: between flushes at most maxRefusalTallies
// (community, author) pairs are held; further pairs are only counted.
func TestRefusalTalliesBounded(t *testing.T) {
	a := newRefusalAudit(nil, quietLogger())
	tr := newTestRelay(t)
	for i := range maxRefusalTallies + 10 {
		ev := &nostr.Event{PubKey: fmt.Sprintf("%064x", i), Kind: 1}
		a.rateLimited(context.Background(), tr.tc, ev, "rate-limited: x")
		a.rateLimited(context.Background(), tr.tc, ev, "rate-limited: x")
	}
	if len(a.pending) != maxRefusalTallies || a.dropped != 20 {
		t.Fatalf("%d tallies, %d dropped", len(a.pending), a.dropped)
	}
	for _, tally := range a.pending {
		if tally.n != 2 {
			t.Fatalf("tally %d, want 2", tally.n)
		}
	}
}
