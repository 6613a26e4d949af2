package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/nostr"
)

const msgBanned = "blocked: you are banned from this community"

// TestBansOnReads: a ban refuses the banned pubkey's reads and writes in
// its community and ends its open streams there, as the relay does; other
// readers and the same pubkey in another community are untouched, and an
// unban restores it.
func TestBansOnReads(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			const A, B = "a.example", "b.example"
			a := community(t, st, A)
			community(t, st, B)
			olga, mallory, carol := newUser(t), newUser(t), newUser(t)
			if err := st.PutCommunityMember(context.Background(), a, olga.pk, channel.RoleAdmin); err != nil {
				t.Fatal(err)
			}
			c := serve(t, st, st, trace.NewRecorder())
			c.mustPost(A, olga.event(t, 1, "hello"), &olga)
			watch, _ := c.stream(A, gonostr.Filter{}, &mallory)
			watch.stored()
			other, _ := c.stream(A, gonostr.Filter{Kinds: []int{1}}, &carol)
			other.stored()
			elsewhere, _ := c.stream(B, gonostr.Filter{Kinds: []int{1}}, &mallory)
			elsewhere.stored()

			c.mustPost(A, olga.event(t, nostr.KindBan, "", []string{"p", mallory.pk}, []string{"reason", "spam"}), &olga)
			if m := watch.next(); m.event != "closed" || m.data != msgBanned {
				t.Fatalf("the banned pubkey's stream: %+v", m)
			}
			if a, _ := c.timeline(A, gonostr.Filter{}, &mallory); a.Status != http.StatusForbidden || !strings.Contains(a.Body, msgBanned) {
				t.Fatalf("the banned pubkey's timeline: %d %s", a.Status, a.Body)
			}
			if _, a := c.stream(A, gonostr.Filter{}, &mallory); a.Status != http.StatusForbidden || !strings.Contains(a.Body, msgBanned) {
				t.Fatalf("the banned pubkey's new stream: %d %s", a.Status, a.Body)
			}
			if _, r := c.post(A, mallory.event(t, 1, "still here"), &mallory); r.Accepted || r.Message != msgBanned {
				t.Fatalf("the banned pubkey's POST: %+v", r)
			}
			// Others read on; the ban is A's alone.
			next := olga.event(t, 1, "after the ban")
			c.mustPost(A, next, &olga)
			if got := other.nextEvent(); got.ID != next.ID {
				t.Fatalf("another reader's stream: %q", got.Content)
			}
			inB := carol.event(t, 1, "in B")
			c.mustPost(B, inB, &mallory)
			if got := elsewhere.nextEvent(); got.ID != inB.ID {
				t.Fatalf("the banned pubkey's stream in B: %q", got.Content)
			}
			if a, _ := c.timeline(B, gonostr.Filter{}, &mallory); a.Status != http.StatusOK {
				t.Fatalf("the banned pubkey reading B: %d %s", a.Status, a.Body)
			}

			c.mustPost(A, olga.event(t, nostr.KindUnban, "", []string{"p", mallory.pk}), &olga)
			if a, got := c.timeline(A, gonostr.Filter{Kinds: []int{1}}, &mallory); a.Status != http.StatusOK || len(got) != 2 {
				t.Fatalf("after the unban: %d %s", a.Status, a.Body)
			}
		})
	}
}
