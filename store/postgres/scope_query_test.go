package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestScopedKindsFanOut checks the per-(kind, channel) fan-out of a
// channel-scoped filter with kinds, in both its UNION ALL and its LATERAL
// form (more than 16 branches), against Query's unscoped answer filtered by
// hand: same rows, same order (created_at DESC, id ASC, ties included).
func TestScopedKindsFanOut(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	c := storetest.Community(t, s, "a.example")
	a, b := storetest.NewAuthor(t), storetest.NewAuthor(t)
	chans := make([]channel.ID, 8)
	for i := range chans {
		chans[i] = storetest.NewChannelID()
	}
	channelOf := map[string]int{} // event id -> index in chans, -1 = community-wide
	var evs []*nostr.Event
	const base = 1767225600 + 86400
	for i := range 96 {
		au := a
		if i%3 == 0 {
			au = b
		}
		kind := []int{1, 9, 7}[i%3]
		ts := base + int64(i/4) // four events per second: ties on created_at
		ch := i%(len(chans)+2) - 2
		var tags []nostr.Tag
		if ch >= 0 {
			tags = append(tags, nostr.Tag{"h", chans[ch].String()})
		}
		ev := au.Event(t, kind, ts, "m", tags...)
		channelOf[ev.ID] = ch
		evs = append(evs, ev)
	}
	storetest.SaveAll(t, s, c, evs)

	query := func(f nostr.Filter, sc channel.Scope) []string {
		var ids []string
		for r, err := range s.QueryScoped(ctx, c, f, sc) {
			if err != nil {
				t.Fatalf("QueryScoped: %v", err)
			}
			ids = append(ids, r.ID)
		}
		return ids
	}
	for _, tc := range []struct {
		name  string
		kinds []int
		scope []int // indexes into chans; nil = community-wide only
		f     func(*nostr.Filter)
	}{
		{name: "one kind, one channel", kinds: []int{9}, scope: []int{3}},
		{name: "two kinds, two channels", kinds: []int{1, 9}, scope: []int{0, 5}},
		{name: "community-wide only", kinds: []int{9, 7}},
		{name: "lateral: three kinds, seven channels", kinds: []int{1, 9, 7}, scope: []int{0, 1, 2, 3, 4, 5, 6}},
		{name: "lateral with author and window", kinds: []int{1, 9, 7}, scope: []int{0, 1, 2, 3, 4, 5, 6, 7},
			f: func(f *nostr.Filter) {
				since, until := int64(base+3), int64(base+20)
				f.Authors, f.Since, f.Until = []string{a.PubKey}, &since, &until
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := make([]channel.ID, len(tc.scope))
			for i, k := range tc.scope {
				ids[i] = chans[k]
			}
			sc := channel.ScopeOf(ids...)
			for _, limit := range []int{1, 5, 13, 500} {
				f := nostr.Filter{Kinds: tc.kinds}
				if tc.f != nil {
					tc.f(&f)
				}
				var want []string
				for r, err := range s.Query(ctx, c, f) {
					if err != nil {
						t.Fatal(err)
					}
					if ch := channelOf[r.ID]; ch < 0 || slices.Contains(tc.scope, ch) {
						want = append(want, r.ID)
					}
				}
				if len(want) > limit {
					want = want[:limit]
				}
				f.Limit, f.LimitSet = limit, true
				if got := query(f, sc); !slices.Equal(got, want) {
					t.Fatalf("limit %d: got %d ids %v\nwant %d ids %v", limit, len(got), got, len(want), want)
				}
			}
		})
	}
}
