package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// cachedIDs reports whether the store's event cache answers a lookup of
// ids in community c (every id cached and current), and with which ids.
func cachedIDs(t *testing.T, s *Store, host string, ids ...string) ([]string, bool) {
	t.Helper()
	s.events.r.Wait() // ristretto applies Sets asynchronously
	c := storetest.Community(t, s, host)
	cseq, err := s.communitySeq(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	recs, ok := s.events.lookup(cseq, c, &nostr.Filter{IDs: ids}, time.Now().Unix(), channel.AllChannels())
	var got []string
	for _, r := range recs {
		got = append(got, r.ID)
	}
	return got, ok
}

// TestEventCache checks that stored events enter the cache, that the
// cache then answers lookups by ids, and that every way an event leaves the store —
// NIP-09 deletion, replacement, expiry (before and after the sweep) —
// keeps it from being answered again, while other communities' entries
// and channel scopes stay correct.
func TestEventCache(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const host = "cache.example"
	c := storetest.Community(t, s, host)
	alice := storetest.NewAuthor(t)
	now := time.Now().Unix()

	note := alice.Event(t, 1, now-10, "note")
	gone := alice.Event(t, 1, now-9, "to be deleted")
	profile := alice.Event(t, 0, now-8, `{"name":"a"}`)
	soon := alice.Event(t, 1, now-7, "expires soon", nostr.Tag{"expiration", fmt.Sprint(now + 2)})
	storetest.SaveAll(t, s, c, []*nostr.Event{note, gone, profile, soon})
	all := []string{note.ID, gone.ID, profile.ID, soon.ID}

	if _, ok := cachedIDs(t, s, host, all...); !ok {
		t.Fatal("the events just stored are not cached") // the writer puts them once committed
	}
	want := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: all})
	if len(want) != 4 {
		t.Fatalf("lookup = %v, want 4 events", want)
	}
	if got, ok := cachedIDs(t, s, host, all...); !ok || !slices.Equal(got, want) {
		t.Fatalf("cache after a lookup = %v, %v; want %v, true", got, ok, want)
	}

	// Another community holding the same events keeps its own entries.
	other := storetest.Community(t, s, "other.example")
	storetest.SaveAll(t, s, other, []*nostr.Event{note})
	if got := storetest.QueryIDs(t, s, other, nostr.Filter{IDs: []string{note.ID}}); len(got) != 1 {
		t.Fatalf("other community = %v", got)
	}

	// NIP-09: the deleted event is never answered again, from the cache or not.
	del := alice.Event(t, nostr.KindDeletion, now-5, "", nostr.Tag{"e", gone.ID})
	storetest.SaveAll(t, s, c, []*nostr.Event{del})
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: all}); slices.Contains(got, gone.ID) {
		t.Fatalf("after deletion: %v still holds %s", got, gone.ID)
	}
	// Replacement.
	profile2 := alice.Event(t, 0, now-4, `{"name":"b"}`)
	storetest.SaveAll(t, s, c, []*nostr.Event{profile2})
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: all}); slices.Contains(got, profile.ID) {
		t.Fatalf("after replacement: %v still holds %s", got, profile.ID)
	}
	// The other community's entry was not needlessly lost to this one's
	// removals unless they share an epoch shard.
	if cseqA, cseqB := mustSeq(t, s, c), mustSeq(t, s, other); cseqA&255 != cseqB&255 {
		if _, ok := cachedIDs(t, s, "other.example", note.ID); !ok {
			t.Error("a removal in one community invalidated another's entries")
		}
	}

	// Expiry: hidden once due, from a cached entry too, and after the sweep.
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: []string{soon.ID}}); len(got) != 1 {
		t.Fatalf("before expiry: %v", got)
	}
	if _, ok := cachedIDs(t, s, host, soon.ID); !ok {
		t.Fatal("the expiring event was not cached")
	}
	time.Sleep(time.Until(time.Unix(now+3, 0)))
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: []string{soon.ID}}); len(got) != 0 {
		t.Fatalf("after expiry: %v", got)
	}
	if _, err := s.DeleteExpired(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: []string{soon.ID}}); len(got) != 0 {
		t.Fatalf("after the sweep: %v", got)
	}
	if got := storetest.QueryIDs(t, s, c, nostr.Filter{IDs: []string{note.ID}}); len(got) != 1 {
		t.Fatalf("a live event: %v", got)
	}
}

func mustSeq(t *testing.T, s *Store, c tenant.CommunityID) int64 {
	t.Helper()
	seq, err := s.communitySeq(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestEventCacheRacesRemovals runs lookups by id while the events they ask
// for are deleted: once a deletion's Save has returned, no lookup that
// starts afterwards may return the event, however its entry was cached.
func TestEventCacheRacesRemovals(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := storetest.Community(t, s, "race.example")
	alice := storetest.NewAuthor(t)
	now := time.Now().Unix()
	const n = 60
	evs := make([]*nostr.Event, n)
	for i := range evs {
		evs[i] = alice.Event(t, 1, now-int64(n)+int64(i), fmt.Sprint("event ", i))
	}
	storetest.SaveAll(t, s, c, evs)

	var (
		mu      sync.Mutex
		deleted = map[string]bool{} // ids whose deletion Save has returned
		wg      sync.WaitGroup
		stop    = make(chan struct{})
	)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ev := evs[(i*7+g)%n]
				mu.Lock()
				wasDeleted := deleted[ev.ID]
				mu.Unlock()
				for rec, err := range s.Query(ctx, c, nostr.Filter{IDs: []string{ev.ID}}) {
					if err != nil {
						t.Error(err)
						return
					}
					if wasDeleted {
						t.Errorf("%s returned after its deletion was acknowledged", rec.ID)
						return
					}
				}
			}
		}()
	}
	for i, ev := range evs {
		if i%2 == 0 {
			continue
		}
		del := alice.Event(t, nostr.KindDeletion, now, "", nostr.Tag{"e", ev.ID})
		if err := s.Save(ctx, c, del); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		deleted[ev.ID] = true
		mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
}

// TestEventCacheDifferential runs random filters twice — the second time
// mostly from the cache the first filled — against a brute-force answer,
// deleting events between rounds, so that every cached path (by ids, by an
// index's rows, by a tag walk) is checked on a warm cache and across
// removals.
func TestEventCacheDifferential(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 11))
	c := storetest.Community(t, s, "warm.example")
	authors := storetest.NewAuthors(t, 5)
	corpus := storetest.RandomCorpus(t, r, authors, 300)
	storetest.SaveAll(t, s, c, corpus)
	now := time.Now()
	live := map[string]*nostr.Event{}
	for _, ev := range corpus {
		if storetest.Live(ev, now) {
			live[ev.ID] = ev
		}
	}
	byAuthor := map[string]storetest.Author{}
	for _, a := range authors {
		byAuthor[a.PubKey] = a
	}
	for round := 0; round < 4; round++ {
		var evs []*nostr.Event
		for _, ev := range live {
			evs = append(evs, ev)
		}
		for i := 0; i < 120; i++ {
			f := storetest.RandomFilter(r, corpus, authors)
			want := storetest.Expected(evs, f)
			for pass := 0; pass < 2; pass++ {
				s.events.r.Wait()
				got := storetest.QueryIDs(t, s, c, f)
				if !slices.Equal(got, want) {
					t.Fatalf("round %d filter %d pass %d %s:\n got %v\nwant %v", round, i, pass, f.AppendJSON(nil), got, want)
				}
			}
		}
		// Delete a few live events between rounds.
		for k := 0; k < 15; k++ {
			victim := corpus[r.IntN(len(corpus))]
			if live[victim.ID] == nil || victim.Kind == nostr.KindDeletion {
				continue
			}
			del := byAuthor[victim.PubKey].Event(t, nostr.KindDeletion, victim.CreatedAt, "", nostr.Tag{"e", victim.ID})
			storetest.SaveAll(t, s, c, []*nostr.Event{del})
			delete(live, victim.ID)
			live[del.ID] = del
		}
	}
}
