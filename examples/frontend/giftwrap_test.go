package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/internal/tracetest"
	"github.com/buzzrelay/buzz/nostr"
)

// TestGiftWraps: a gift wrap (kind 1059) is read and streamed only by its
// p-tagged recipient, authenticated; to everyone else it does not exist.
func TestGiftWraps(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			const A = "a.example"
			community(t, st, A)
			rec := trace.NewRecorder()
			c := serve(t, st, st, rec)
			sender, alice, bob := newUser(t), newUser(t), newUser(t)
			wraps := gonostr.Filter{Kinds: []int{nostr.KindGiftWrap}}
			mixed := gonostr.Filter{Kinds: []int{1, nostr.KindGiftWrap}}
			forAlice := gonostr.Filter{Kinds: []int{nostr.KindGiftWrap}, Tags: gonostr.TagMap{"p": {alice.pk}}}

			// Streams open before the wraps are published.
			aliceLive, _ := c.stream(A, gonostr.Filter{}, &alice)
			bobLive, _ := c.stream(A, gonostr.Filter{}, &bob)
			anonLive, _ := c.stream(A, mixed, nil)
			for _, s := range []*sse{aliceLive, bobLive, anonLive} {
				s.stored()
			}

			wrap := sender.event(t, nostr.KindGiftWrap, "sealed", []string{"p", alice.pk})
			note := sender.event(t, 1, "public")
			c.mustPost(A, wrap, nil)
			c.mustPost(A, note, nil)
			byID := gonostr.Filter{IDs: []string{wrap.ID}}

			// Live: alice gets her wrap, then the note; the others only the
			// note.
			if got := aliceLive.nextEvent(); got.ID != wrap.ID {
				t.Fatalf("alice's first live event = %q, want her gift wrap", got.Content)
			}
			for name, s := range map[string]*sse{"alice": aliceLive, "bob": bobLive, "anonymous": anonLive} {
				if got := s.nextEvent(); got.ID != note.ID {
					t.Fatalf("%s's live event = %q (kind %d), want the note", name, got.Content, got.Kind)
				}
			}

			// Asking for gift wraps only before authenticating is
			// auth-required; other anonymous reads simply lack them.
			if a, _ := c.timeline(A, wraps, nil); a.Status != http.StatusUnauthorized || !strings.Contains(a.Body, channel.MsgGiftWrapAuth) {
				t.Fatalf("anonymous timeline of gift wraps: %d %s", a.Status, a.Body)
			}
			if _, a := c.stream(A, forAlice, nil); a.Status != http.StatusUnauthorized {
				t.Fatalf("anonymous stream of gift wraps: %d %s", a.Status, a.Body)
			}
			for name, f := range map[string]gonostr.Filter{"by id": byID, "mixed": mixed, "everything": {}} {
				if _, got := c.timeline(A, f, nil); slices.Contains(ids(got), wrap.ID) {
					t.Fatalf("anonymous %s read returned the gift wrap", name)
				}
			}
			// Bob, authenticated, is not the recipient: for him it does not
			// exist.
			for name, f := range map[string]gonostr.Filter{"kind": wraps, "#p alice": forAlice, "by id": byID, "mixed": mixed, "everything": {}} {
				a, got := c.timeline(A, f, &bob)
				if a.Status != http.StatusOK || slices.Contains(ids(got), wrap.ID) {
					t.Fatalf("bob's %s read: %d %v", name, a.Status, ids(got))
				}
				if name == "kind" || name == "#p alice" {
					if len(got) != 0 {
						t.Fatalf("bob's %s read returned %v", name, ids(got))
					}
				}
			}
			// Alice reads it however she asks, on the timeline and a stream.
			for name, f := range map[string]gonostr.Filter{"kind": wraps, "#p alice": forAlice, "by id": byID, "mixed": mixed, "everything": {}} {
				if a, got := c.timeline(A, f, &alice); !slices.Contains(ids(got), wrap.ID) {
					t.Fatalf("alice's %s read: %d %s", name, a.Status, a.Body)
				}
			}
			s, _ := c.stream(A, wraps, &alice)
			if got := s.stored(); !slices.Equal(ids(got), []string{wrap.ID}) {
				t.Fatalf("alice's stream of gift wraps: %v", ids(got))
			}
			tracetest.CheckTraces(t, rec, false)
		})
	}
}
