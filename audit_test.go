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
	"github.com/buzzrelay/buzz/store/storetest"
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
	c.MustAccept(s.Event(1, now(), "one"))
	for i := range 3 {
		ok := c.Publish(s.Event(1, now(), "over"+string(rune('a'+i))))
		mustPrefix(t, "over quota", ok.Message, "rate-limited: ")
	}
	c.MustAccept(quiet.Event(1, now(), "within quota"))

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
			if e.Action != audit.RateLimited || e.Actor != s.Pub() || json.Unmarshal(e.Detail, &d) != nil || d.Kind != 1 {
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

// TestAuditOverWebSocket: changes made by clients over the relay land in
// the community's chain with their authors as actors, on both backends; a
// refused command adds nothing.
func TestAuditOverWebSocket(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		st := b.open(t)
		p := startPod(t, st, "ws-audit.example")
		c := p.dial(t)
		alice, bob := newSigner(t), newSigner(t)
		note := alice.Event(1, now(), "to be deleted")
		c.MustAccept(note)
		c.MustAccept(alice.Event(nostr.KindDeletion, now(), "", nostr.Tag{"e", note.ID}))
		ch := storetest.NewChannelID()
		c.MustAccept(alice.Event(nostr.KindCreateChannel, now(), "", nostr.Tag{"h", ch.String()}, nostr.Tag{"name", "general"}))
		c.MustAccept(alice.Event(nostr.KindPutUser, now(), "", nostr.Tag{"h", ch.String()}, nostr.Tag{"p", bob.Pub(), "admin"}))
		if ok := c.Publish(bob.Event(nostr.KindDeleteChannel, now(), "", nostr.Tag{"h", ch.String()})); ok.OK {
			t.Fatal("an admin deleted the channel")
		}
		es, err := st.(store.AuditLog).AuditEntries(context.Background(), p.tc.Community(), 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []audit.Action{audit.EventDeletionRequested, audit.ChannelCreated, audit.ChannelMemberPut}
		if len(es) != len(want) {
			t.Fatalf("%d entries: %+v", len(es), es)
		}
		for i, e := range es {
			if e.Action != want[i] || e.Actor != alice.Pub() {
				t.Errorf("entry %d: %s by %s", e.Seq, e.Action, e.Actor)
			}
		}
	})
}
