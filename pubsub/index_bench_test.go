package pubsub

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/tenant"
)

// benchWorld is a population of realistic subscriptions and live events:
// follow feeds of 10-100 authors (one in ten of them from a small set of
// popular authors, who also write one event in five), notification and
// thread subscriptions on #p and #e, profile lookups, a few by-id lookups and
// a few global feeds (0.5%, which every event of their kind reaches).
type benchWorld struct {
	subs   []*Subscription
	events []*nostr.Event
}

func newBenchWorld(nSubs int) *benchWorld {
	r := rand.New(rand.NewPCG(42, uint64(nSubs)))
	nAuthors := max(100, nSubs/2)
	authors := make([]string, nAuthors)
	for i := range authors {
		authors[i] = hex64("a", i)
	}
	nNotes := max(100, nSubs)
	notes := make([]string, nNotes)
	for i := range notes {
		notes[i] = hex64("e", i)
	}
	nPopular := max(20, nAuthors/100)
	pick := func(popularPct int) string {
		if r.IntN(100) < popularPct {
			return authors[r.IntN(nPopular)]
		}
		return authors[r.IntN(nAuthors)]
	}
	authorList := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = pick(10)
		}
		return out
	}

	w := &benchWorld{}
	for i := range nSubs {
		o := &owner{i}
		var fs []nostr.Filter
		switch p := r.IntN(1000); {
		case p < 400: // home feed: notes, reposts, reactions of followed authors
			fs = []nostr.Filter{{Authors: authorList(10 + r.IntN(90)), Kinds: []int{1, 6, 7}, Limit: 0, LimitSet: true}}
		case p < 650: // notifications of the user
			fs = []nostr.Filter{{Kinds: []int{1, 6, 7, 9735}, Tags: map[string][]string{"p": {authors[r.IntN(nAuthors)]}}}}
		case p < 800: // a thread: replies and reactions to a note
			fs = []nostr.Filter{{Kinds: []int{1, 7}, Tags: map[string][]string{"e": {notes[r.IntN(nNotes)]}}}}
		case p < 930: // profiles and contact lists of a few authors
			fs = []nostr.Filter{{Kinds: []int{0, 3}, Authors: authorList(1 + r.IntN(5))}}
		case p < 995: // a note by id, plus its replies
			id := notes[r.IntN(nNotes)]
			fs = []nostr.Filter{{IDs: []string{id}}, {Tags: map[string][]string{"e": {id}}, Kinds: []int{1}}}
		default: // global feed of one kind, since now
			since := int64(1_700_000_000)
			fs = []nostr.Filter{{Kinds: []int{[]int{1, 30023, 9735}[r.IntN(3)]}, Since: &since}}
		}
		w.subs = append(w.subs, &Subscription{Owner: o, ID: fmt.Sprintf("sub%d", i), Filters: fs})
	}
	for i := range 1024 {
		ev := &nostr.Event{
			ID:        hex64("f", i),
			PubKey:    pick(20),
			CreatedAt: 1_700_000_100,
			Kind:      []int{1, 1, 1, 1, 7, 7, 6, 0, 3, 9735}[r.IntN(10)],
		}
		for range r.IntN(4) {
			ev.Tags = append(ev.Tags, nostr.Tag{"p", authors[r.IntN(nAuthors)]})
		}
		if r.IntN(2) == 0 {
			ev.Tags = append(ev.Tags, nostr.Tag{"e", notes[r.IntN(nNotes)], "", "reply"})
		}
		if r.IntN(4) == 0 {
			ev.Tags = append(ev.Tags, nostr.Tag{"t", "nostr"}, nostr.Tag{"client", "bench"})
		}
		w.events = append(w.events, ev)
	}
	return w
}

var benchSizes = []int{10, 1_000, 100_000}

var worlds sync.Map // size -> *benchWorld, built once per process

func world(n int) *benchWorld {
	if w, ok := worlds.Load(n); ok {
		return w.(*benchWorld)
	}
	w, _ := worlds.LoadOrStore(n, newBenchWorld(n))
	return w.(*benchWorld)
}

// BenchmarkIndexMatch matches one live event against n subscriptions, with
// the Index and with a brute-force scan of every filter, in the same run.
// matches/op is the average number of subscriptions an event reaches.
func BenchmarkIndexMatch(b *testing.B) {
	for _, n := range benchSizes {
		w := world(n)
		c := tenant.NewCommunityID()
		x := NewIndex()
		for _, s := range w.subs {
			x.Add(c, s)
		}
		// Another community of the same size must not slow this one down.
		other := tenant.NewCommunityID()
		for _, s := range w.subs {
			x.Add(other, s)
		}
		// The benchmark compares like with like: both must find the same set.
		for _, ev := range w.events[:32] {
			if got, want := indexMatch(b, x, c, ev), bruteMatch(w.subs, ev); len(got) != len(want) {
				b.Fatalf("index found %d subscriptions, brute force %d", len(got), len(want))
			}
		}
		b.Run(fmt.Sprintf("subs=%d/index", n), func(b *testing.B) {
			var matched int
			fn := func(*Subscription) { matched++ }
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				x.Match(c, w.events[i%len(w.events)], fn)
				i++
			}
			b.ReportMetric(float64(matched)/float64(i), "matches/op")
		})
		b.Run(fmt.Sprintf("subs=%d/brute", n), func(b *testing.B) {
			var matched int
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ev := w.events[i%len(w.events)]
				for _, s := range w.subs {
					for j := range s.Filters {
						if search.Matches(&s.Filters[j], ev) {
							matched++
							break
						}
					}
				}
				i++
			}
			b.ReportMetric(float64(matched)/float64(i), "matches/op")
		})
	}
}

// BenchmarkIndexMatchParallel measures fan-out matching from all cores while
// one goroutine keeps adding and removing subscriptions (connections
// opening and closing REQs), to see the per-shard RWMutex under contention.
func BenchmarkIndexMatchParallel(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		w := world(n)
		c := tenant.NewCommunityID()
		x := NewIndex()
		for _, s := range w.subs {
			x.Add(c, s)
		}
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			stop := make(chan struct{})
			var writes atomic.Int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				churn := &owner{-1}
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					s := w.subs[i%len(w.subs)]
					x.Add(c, &Subscription{Owner: churn, ID: "churn", Filters: s.Filters})
					x.Remove(c, churn, "churn")
					writes.Add(1)
					if i%64 == 0 {
						runtime.Gosched()
					}
				}
			}()
			var ctr atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(ctr.Add(1)) * 7919
				for pb.Next() {
					x.Match(c, w.events[i%len(w.events)], func(*Subscription) {})
					i++
				}
			})
			b.StopTimer()
			close(stop)
			<-done
			b.ReportMetric(float64(writes.Load())/b.Elapsed().Seconds(), "writes/s")
		})
	}
}

// BenchmarkIndexAddRemove measures the cost of registering and removing one
// realistic subscription in an index holding n others.
func BenchmarkIndexAddRemove(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		w := world(n)
		c := tenant.NewCommunityID()
		x := NewIndex()
		for _, s := range w.subs {
			x.Add(c, s)
		}
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			o := &owner{-1}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s := w.subs[i%len(w.subs)]
				x.Add(c, &Subscription{Owner: o, ID: "x", Filters: s.Filters})
				x.Remove(c, o, "x")
				i++
			}
		})
	}
}

// BenchmarkIndexMatchWideFilters matches one event against 1,000
// subscriptions that each list 1,000 kinds (the event's among them): the
// cost per matched filter is a set lookup, whatever the list's length.
func BenchmarkIndexMatchWideFilters(b *testing.B) {
	x := NewIndex()
	c := tenant.NewCommunityID()
	kinds := make([]int, 1000)
	for i := range kinds {
		kinds[i] = 1000 + i
	}
	kinds[999] = 1
	for i := range 1000 {
		x.Add(c, &Subscription{Owner: i, ID: "s", Filters: []nostr.Filter{{Kinds: kinds}}})
	}
	ev := &nostr.Event{ID: hex64("e", 1), PubKey: hex64("a", 1), Kind: 1}
	for b.Loop() {
		n := 0
		x.Match(c, ev, func(*Subscription) { n++ })
		if n != 1000 {
			b.Fatalf("matched %d", n)
		}
	}
}

// BenchmarkIndexMatchSearch matches events with 30 words of content
// against 1,000 ordinary subscriptions, alone and with 10 or 100 NIP-50
// search subscriptions beside them: the ordinary ones pay one map-length
// check while no search is subscribed; with searches each event's content
// is tokenized once and only filters posted under its words are checked.
func BenchmarkIndexMatchSearch(b *testing.B) {
	w := world(1_000)
	r := rand.New(rand.NewPCG(7, 7))
	vocab := make([]string, 2000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	events := make([]*nostr.Event, len(w.events))
	for i, ev := range w.events {
		e := *ev
		text := make([]byte, 0, 200)
		for j := range 30 {
			if j > 0 {
				text = append(text, ' ')
			}
			text = append(text, vocab[r.IntN(len(vocab))]...)
		}
		e.Content = string(text)
		events[i] = &e
	}
	for _, nSearch := range []int{0, 10, 100} {
		c := tenant.NewCommunityID()
		x := NewIndex()
		for _, s := range w.subs {
			x.Add(c, s)
		}
		for i := range nSearch {
			f := nostr.Filter{Search: vocab[r.IntN(len(vocab))] + " " + vocab[r.IntN(len(vocab))]}
			if i%2 == 0 {
				f.Kinds = []int{1}
			}
			x.Add(c, &Subscription{Owner: &owner{-1 - i}, ID: "search", Filters: []nostr.Filter{f}})
		}
		b.Run(fmt.Sprintf("search-subs=%d", nSearch), func(b *testing.B) {
			var matched int
			fn := func(*Subscription) { matched++ }
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				x.Match(c, events[i%len(events)], fn)
				i++
			}
			b.ReportMetric(float64(matched)/float64(i), "matches/op")
		})
	}
}

// BenchmarkIndexMatchTopic is the fan-out of a live topic: n subscriptions
// with the same {"kinds":[1],"#t":[topic]} filter, one per connection, all
// reached by each event (they are posted by tag, so Match deduplicates).
func BenchmarkIndexMatchTopic(b *testing.B) {
	for _, n := range []int{200, 1_000, 10_000} {
		b.Run(fmt.Sprintf("subs=%d", n), func(b *testing.B) {
			c := tenant.NewCommunityID()
			x := NewIndex()
			f := nostr.Filter{Kinds: []int{1}, Tags: map[string][]string{"t": {"live"}}}
			for i := range n {
				x.Add(c, &Subscription{Owner: i, ID: "fan", Filters: []nostr.Filter{f}})
			}
			ev := &nostr.Event{Kind: 1, PubKey: strings.Repeat("a", 64), ID: strings.Repeat("b", 64),
				Tags: nostr.Tags{{"t", "live"}, {"p", strings.Repeat("c", 64)}}}
			var matched int
			fn := func(*Subscription) { matched++ }
			b.ReportAllocs()
			for b.Loop() {
				x.Match(c, ev, fn)
			}
			if matched != n*b.N {
				b.Fatalf("matched %d, want %d", matched, n*b.N)
			}
		})
	}
}
