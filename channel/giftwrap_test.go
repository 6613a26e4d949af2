package channel_test

import (
	"context"
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
)

func TestGiftWrapQuery(t *testing.T) {
	wraps := nostr.Filter{Kinds: []int{nostr.KindGiftWrap}}
	for _, tc := range []struct {
		name      string
		f         nostr.Filter
		check, ok bool
	}{
		{"no kinds", nostr.Filter{}, true, true},
		{"other kinds", nostr.Filter{Kinds: []int{1}}, false, true},
		{"mixed kinds", nostr.Filter{Kinds: []int{1, nostr.KindGiftWrap}}, true, true},
		{"gift wraps only", wraps, false, true},
		{"gift wraps twice", nostr.Filter{Kinds: []int{nostr.KindGiftWrap, nostr.KindGiftWrap}}, false, true},
	} {
		q, check, ok := channel.GiftWrapQuery(tc.f, []string{"a"})
		if check != tc.check || ok != tc.ok {
			t.Errorf("%s: check, ok = %v, %v; want %v, %v", tc.name, check, ok, tc.check, tc.ok)
		}
		_, only := q.Tags["p"]
		if wantP := slices.Equal(tc.f.Kinds, []int{nostr.KindGiftWrap}) || len(tc.f.Kinds) == 2 && tc.f.Kinds[0] == tc.f.Kinds[1]; only != wantP {
			t.Errorf("%s: narrowed = %v, want %v", tc.name, only, wantP)
		}
	}
	// A gift-wrap-only filter is narrowed to "#p" ∩ readers, its other
	// conditions kept.
	f := wraps
	f.Tags = map[string][]string{"p": {"a", "b", "a"}, "t": {"x"}}
	q, check, ok := channel.GiftWrapQuery(f, []string{"a", "c"})
	if !ok || check || !slices.Equal(q.Tags["p"], []string{"a"}) || !slices.Equal(q.Tags["t"], []string{"x"}) {
		t.Fatalf("narrowed = %v check %v ok %v", q.Tags, check, ok)
	}
	if !slices.Equal(f.Tags["p"], []string{"a", "b", "a"}) {
		t.Fatal("GiftWrapQuery changed its argument's tags")
	}
	if q, _, ok := channel.GiftWrapQuery(wraps, []string{"a", "c"}); !ok || !slices.Equal(q.Tags["p"], []string{"a", "c"}) {
		t.Fatalf("no #p: narrowed to %v, ok %v", q.Tags["p"], ok)
	}
	for name, readers := range map[string][]string{"to nobody": {"a"}, "anonymous": nil} {
		f := wraps
		f.Tags = map[string][]string{"p": {"b"}}
		if _, _, ok := channel.GiftWrapQuery(f, readers); ok {
			t.Errorf("%s: narrowing left something to read", name)
		}
	}
}

func TestGiftWrapAuthNeeded(t *testing.T) {
	wraps := nostr.Filter{Kinds: []int{nostr.KindGiftWrap}}
	if !channel.GiftWrapAuthNeeded([]nostr.Filter{wraps, wraps}, nil) {
		t.Error("anonymous read of gift wraps only: no auth needed")
	}
	if channel.GiftWrapAuthNeeded([]nostr.Filter{wraps}, []string{"a"}) {
		t.Error("authenticated read: auth needed")
	}
	if channel.GiftWrapAuthNeeded([]nostr.Filter{wraps, {Kinds: []int{1}}}, nil) {
		t.Error("a filter asks for more than gift wraps: auth needed")
	}
}

func TestGiftWrapVisible(t *testing.T) {
	sender, alice, bob := storetest.NewAuthor(t), storetest.NewAuthor(t), storetest.NewAuthor(t)
	wrap := sender.Event(t, nostr.KindGiftWrap, 1, "x", nostr.Tag{"p", alice.PubKey})
	raw := wrap.AppendJSON(nil)
	for name, tc := range map[string]struct {
		readers []string
		want    bool
	}{
		"anonymous": {nil, false},
		"another":   {[]string{bob.PubKey}, false},
		"recipient": {[]string{bob.PubKey, alice.PubKey}, true},
	} {
		if got := channel.GiftWrapVisible(wrap, tc.readers); got != tc.want {
			t.Errorf("%s: GiftWrapVisible = %v", name, got)
		}
		if got := channel.GiftWrapVisibleRaw(raw, tc.readers); got != tc.want {
			t.Errorf("%s: GiftWrapVisibleRaw = %v", name, got)
		}
	}
	// Not a gift wrap: visible to anyone, whatever its content mimics.
	note := sender.Event(t, 10590, 1, `,"kind":1059,`)
	if !channel.GiftWrapVisible(note, nil) || !channel.GiftWrapVisibleRaw(note.AppendJSON(nil), nil) {
		t.Fatal("a kind 10590 note was taken for a gift wrap")
	}
	// A stored gift wrap that does not parse reaches nobody.
	if channel.GiftWrapVisibleRaw([]byte(`{"id":"x","pubkey":"y","created_at":1,"kind":1059,`), []string{alice.PubKey}) {
		t.Fatal("a malformed gift wrap was visible")
	}
}

// TestCountGiftWrapped counts through a real store: the filters' count,
// minus their gift wraps, plus the reader's own, in one store call.
func TestCountGiftWrapped(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	alice, bob := w.member, w.other
	// Every event of this test carries "t": the world's channel commands
	// do not.
	tag := nostr.Tag{"t", "gw"}
	for _, ev := range []*nostr.Event{
		w.owner.Event(t, nostr.KindGiftWrap, 1_700_000_001, "1", nostr.Tag{"p", alice.PubKey}, tag),
		w.owner.Event(t, nostr.KindGiftWrap, 1_700_000_002, "2", nostr.Tag{"p", alice.PubKey}, tag),
		w.owner.Event(t, nostr.KindGiftWrap, 1_700_000_003, "3", nostr.Tag{"p", bob.PubKey}, tag),
		w.owner.Event(t, nostr.KindNote, 1_700_000_004, "note", tag),
		// Untagged: only a filter with no tag condition reaches it.
		w.owner.Event(t, nostr.KindGiftWrap, 1_700_000_005, "4", nostr.Tag{"p", bob.PubKey}),
	} {
		if err := w.st.Save(ctx, w.c, ev); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	count := func(ctx context.Context, sets [][]nostr.Filter) ([]int64, error) {
		calls++
		return w.st.CountEach(ctx, w.c, sets, channel.AllChannels())
	}
	all := map[string][]string{"t": {"gw"}}
	everything := nostr.Filter{Tags: all}
	wraps := nostr.Filter{Kinds: []int{nostr.KindGiftWrap}, Tags: all}
	for _, tc := range []struct {
		name    string
		filters []nostr.Filter
		readers []string
		want    int64
	}{
		{"anonymous, everything", []nostr.Filter{everything}, nil, 1},
		{"anonymous, gift wraps", []nostr.Filter{wraps}, nil, 0},
		{"alice, everything", []nostr.Filter{everything}, []string{alice.PubKey}, 3},
		{"alice, gift wraps", []nostr.Filter{wraps}, []string{alice.PubKey}, 2},
		{"bob, gift wraps", []nostr.Filter{wraps}, []string{bob.PubKey}, 1},
		{"both, everything", []nostr.Filter{everything}, []string{alice.PubKey, bob.PubKey}, 4},
		{"alice, notes", []nostr.Filter{{Kinds: []int{nostr.KindNote}, Tags: all}}, []string{alice.PubKey}, 1},
		{"alice, notes and gift wraps", []nostr.Filter{{Kinds: []int{nostr.KindNote, nostr.KindGiftWrap}, Tags: all}}, []string{alice.PubKey}, 3},
		{"bob, #p alice", []nostr.Filter{{Kinds: []int{nostr.KindGiftWrap}, Tags: map[string][]string{"p": {alice.PubKey}}}}, []string{bob.PubKey}, 0},
		{"alice, #p alice", []nostr.Filter{{Kinds: []int{nostr.KindGiftWrap}, Tags: map[string][]string{"p": {alice.PubKey}}}}, []string{alice.PubKey}, 2},
		// An empty kinds list matches nothing, so it has no gift-wrap
		// part (which would be every gift wrap of the community).
		{"alice, empty kinds and everything", []nostr.Filter{{Kinds: []int{}}, everything}, []string{alice.PubKey}, 3},
	} {
		calls = 0
		n, err := channel.CountGiftWrapped(ctx, tc.filters, tc.readers, count)
		if err != nil {
			t.Fatal(err)
		}
		if calls > 1 {
			t.Errorf("%s: %d store counts, want at most one", tc.name, calls)
		}
		if n != tc.want {
			t.Errorf("%s: count = %d, want %d", tc.name, n, tc.want)
		}
	}
}
