package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// RandomCorpus builds n signed events from a small pool of authors, kinds,
// tag values and timestamps, so that random filters hit, miss and tie often.
// Kinds are regular (nothing is replaced); some events carry a NIP-40
// expiration in the past and are therefore not live: Live reports which.
func RandomCorpus(tb testing.TB, r *rand.Rand, authors []Author, n int) []*nostr.Event {
	tb.Helper()
	now := time.Now().Unix()
	kinds := []int{1, 4, 7, 1111, 9735}
	words := []string{"go", "nostr", "bee", "", "Ünïcode", "a\"b", "x y"}
	refs := make([]string, 8)
	for i := range refs {
		refs[i] = fmt.Sprintf("%064x", r.Uint64())
	}
	drafts := make([]Draft, n)
	for i := range drafts {
		var tags nostr.Tags
		for j := r.IntN(5); j > 0; j-- {
			switch r.IntN(7) {
			case 0:
				tags = append(tags, nostr.Tag{"e", refs[r.IntN(len(refs))]})
			case 1:
				tags = append(tags, nostr.Tag{"p", authors[r.IntN(len(authors))].PubKey})
			case 2, 3:
				tags = append(tags, nostr.Tag{"t", words[r.IntN(len(words))]})
			case 4:
				tags = append(tags, nostr.Tag{"E", refs[r.IntN(len(refs))], "wss://relay"})
			case 5:
				tags = append(tags, nostr.Tag{"d", words[r.IntN(len(words))]})
			case 6:
				tags = append(tags, nostr.Tag{"t"}) // a name with no value matches nothing
			}
		}
		switch r.IntN(12) {
		case 0:
			tags = append(tags, nostr.Tag{"expiration", fmt.Sprint(now - 1000)})
		case 1:
			tags = append(tags, nostr.Tag{"expiration", fmt.Sprint(now + 1_000_000)})
		}
		drafts[i] = Draft{
			Author: authors[r.IntN(len(authors))],
			Event: nostr.Event{
				Kind:      kinds[r.IntN(len(kinds))],
				CreatedAt: base + int64(r.IntN(40)),
				Content:   fmt.Sprint("event ", i),
				Tags:      tags,
			},
		}
	}
	return SignAll(tb, drafts)
}

// Live reports whether ev is visible to queries at now (no NIP-40
// expiration at or before now).
func Live(ev *nostr.Event, now time.Time) bool {
	exp, ok := ev.Expiration()
	return !ok || exp > now.Unix()
}

// RandomFilter builds a filter whose values are drawn mostly from corpus,
// so it often matches something.
func RandomFilter(r *rand.Rand, corpus []*nostr.Event, authors []Author) nostr.Filter {
	var f nostr.Filter
	pick := func() *nostr.Event { return corpus[r.IntN(len(corpus))] }
	if r.IntN(5) == 0 {
		f.IDs = []string{}
		for j := r.IntN(6); j > 0; j-- {
			f.IDs = append(f.IDs, pick().ID)
		}
		if r.IntN(3) == 0 {
			f.IDs = append(f.IDs, fmt.Sprintf("%064x", r.Uint64()))
		}
	}
	if r.IntN(3) == 0 {
		f.Authors = []string{}
		for j := r.IntN(3); j > 0; j-- {
			f.Authors = append(f.Authors, authors[r.IntN(len(authors))].PubKey)
		}
	}
	if r.IntN(3) == 0 {
		f.Kinds = []int{}
		for j := r.IntN(3); j > 0; j-- {
			f.Kinds = append(f.Kinds, pick().Kind)
		}
		if r.IntN(4) == 0 {
			f.Kinds = append(f.Kinds, 30000+r.IntN(10))
		}
	}
	if r.IntN(2) == 0 {
		f.Tags = map[string][]string{}
		for j := 1 + r.IntN(2); j > 0; j-- {
			ev := pick()
			if len(ev.Tags) == 0 {
				continue
			}
			tag := ev.Tags[r.IntN(len(ev.Tags))]
			if len(tag) < 2 {
				f.Tags[tag[0]] = []string{}
				continue
			}
			vals := append(f.Tags[tag[0]], tag[1])
			if r.IntN(3) == 0 {
				vals = append(vals, "nothing-has-this")
			}
			f.Tags[tag[0]] = vals
		}
	}
	if r.IntN(3) == 0 {
		f.Since = Ptr(base + int64(r.IntN(42)) - 1)
	}
	if r.IntN(3) == 0 {
		f.Until = Ptr(base + int64(r.IntN(42)) - 1)
	}
	if r.IntN(2) == 0 {
		f.LimitSet = true
		f.Limit = r.IntN(30)
	}
	return f
}

// testDifferential compares Query and Count with a brute-force evaluation
// of search.Matches over the live corpus, for random filters, with a
// second community holding a look-alike corpus.
func testDifferential(t *testing.T, b store.Backend) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0x6275_7a7a))
	a := Community(t, b, "a.example")
	other := Community(t, b, "b.example")
	authors := NewAuthors(t, 6)
	corpus := RandomCorpus(t, r, authors, 300)
	noise := RandomCorpus(t, r, authors, 150)
	SaveAll(t, b, a, corpus)
	SaveAll(t, b, other, noise)
	now := time.Now()
	var live []*nostr.Event
	for _, ev := range corpus {
		if Live(ev, now) {
			live = append(live, ev)
		}
	}
	for i := 0; i < 300; i++ {
		f := RandomFilter(r, corpus, authors)
		got := QueryIDs(t, b, a, f)
		want := Expected(live, f)
		wantIDs(t, fmt.Sprintf("seed %d, filter %d %s", seed, i, f.AppendJSON(nil)), got, want...)
	}
	for i := 0; i < 60; i++ {
		var fs []nostr.Filter
		distinct := map[string]bool{}
		for j := 1 + r.IntN(3); j > 0; j-- {
			f := RandomFilter(r, corpus, authors)
			fs = append(fs, f)
			f.LimitSet, f.Limit = false, 0
			for _, id := range Expected(live, f) {
				distinct[id] = true
			}
		}
		if n := CountOf(t, b, a, fs...); n != int64(len(distinct)) {
			t.Fatalf("seed %d, count %d: got %d, want %d", seed, i, n, len(distinct))
		}
	}
}
