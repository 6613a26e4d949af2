package main

import (
	"context"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

// TestGenerateIsDeterministicAndValid checks that a seed always yields the
// same corpus, that every event verifies, and that the corpus is safe for
// BulkLoad: distinct ids and at most one version per replaceable or
// addressable coordinate.
func TestGenerateIsDeterministicAndValid(t *testing.T) {
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC).Unix()
	a, keys := generate(400, 20, 9, end, 5, 0)
	b, _ := generate(400, 20, 9, end, 5, 0)
	if len(a) != 400 || len(b) != 400 {
		t.Fatalf("generated %d and %d events, want 400", len(a), len(b))
	}
	for i := range a {
		if a[i].ev.ID != b[i].ev.ID {
			t.Fatalf("event %d differs between runs with one seed", i)
		}
	}
	if err := signAll(context.Background(), a, keys); err != nil {
		t.Fatal(err)
	}
	v, err := nostr.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ids := map[string]bool{}
	coords := map[string]bool{}
	kinds := map[int]int{}
	for i, g := range a {
		if err := v.Verify(g.ev); err != nil {
			t.Fatalf("event %d (kind %d): %v", i, g.ev.Kind, err)
		}
		if ids[g.ev.ID] {
			t.Fatalf("duplicate id %s", g.ev.ID)
		}
		ids[g.ev.ID] = true
		if co := g.ev.Coordinate(); co != "" {
			if coords[co] {
				t.Fatalf("two versions of %s", co)
			}
			coords[co] = true
		}
		if g.ev.CreatedAt >= end+24*3600 || g.ev.CreatedAt < end-30*24*3600 {
			t.Fatalf("created_at %d outside the month", g.ev.CreatedAt)
		}
		kinds[g.ev.Kind]++
		if _, inChannel, err := channel.OfEvent(g.ev); err != nil || inChannel != (g.ev.Kind == 9) {
			t.Fatalf("kind %d: channel %v, %v", g.ev.Kind, inChannel, err)
		}
	}
	for _, k := range []int{0, 1, 3, 7, 9} {
		if kinds[k] == 0 {
			t.Errorf("no events of kind %d: %v", k, kinds)
		}
	}
}
