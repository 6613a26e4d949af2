package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

func TestIndexedTags(t *testing.T) {
	ev := &nostr.Event{Tags: nostr.Tags{
		{"t", "b"}, {"e", "x", "wss://r"}, {"t", "a"}, {"t", "b"}, {"t"}, {"title", "long names are not indexed"}, {"p", ""},
	}}
	want := []store.IndexedTag{{"e", "x"}, {"p", ""}, {"t", "a"}, {"t", "b"}}
	if got := store.IndexedTags(ev); !slices.Equal(got, want) {
		t.Fatalf("IndexedTags = %v, want %v", got, want)
	}
}

func TestDeletionTargets(t *testing.T) {
	pk := strings.Repeat("a", 64)
	id := strings.Repeat("0", 62) + "ab"
	ev := &nostr.Event{PubKey: pk, Kind: nostr.KindDeletion, Tags: nostr.Tags{
		{"e", id},
		{"e", strings.ToUpper(id)},                          // not lowercase hex
		{"e", id[:62]},                                      // too short
		{"a", "30023:" + pk + ":post"},                      // addressable
		{"a", "30023:" + pk + ":a:b"},                       // d may hold colons
		{"a", "0:" + pk + ":"},                              // replaceable
		{"a", "10002:" + pk + ":x"},                         // replaceable: one slot, d ignored
		{"a", "30023:" + strings.Repeat("b", 64) + ":post"}, // another author's
		{"a", "030023:" + pk + ":post"},                     // not canonical decimal
		{"a", "1:" + pk + ":"},                              // a regular kind has no coordinate
		{"a", "70000:" + pk + ":"},                          // beyond the kind range
		{"a", "30023:" + pk},                                // no d part
		{"e"},
	}}
	ids, coords := store.DeletionTargets(ev)
	if !slices.Equal(ids, []string{id}) {
		t.Errorf("ids = %v", ids)
	}
	want := []store.Coordinate{{30023, "post"}, {30023, "a:b"}, {0, ""}, {10002, ""}}
	if !slices.Equal(coords, want) {
		t.Errorf("coords = %v, want %v", coords, want)
	}
}
