// Package storetest is the conformance suite every store.Backend must pass
// unchanged, plus helpers (signing authors, event builders, collectors) that
// other packages' tests reuse.
//
// A backend's test calls Run with a function that opens a fresh, empty
// backend; Run calls it once per subtest, and closes nothing itself (open
// should register cleanup with t.Cleanup).
//
// It must not import a store backend (the backends' tests import it) or the
// relay.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Author is a signing identity for test events.
type Author struct {
	Key    nostr.SecretKey
	PubKey string
}

// NewAuthor returns an author with a fresh random key.
func NewAuthor(tb testing.TB) Author {
	tb.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		tb.Fatalf("generate key: %v", err)
	}
	return Author{Key: sk, PubKey: sk.PublicKey()}
}

// NewAuthors returns n distinct authors.
func NewAuthors(tb testing.TB, n int) []Author {
	tb.Helper()
	out := make([]Author, n)
	for i := range out {
		out[i] = NewAuthor(tb)
	}
	return out
}

// Event returns a signed event of kind with the given created_at, content
// and tags.
func (a Author) Event(tb testing.TB, kind int, createdAt int64, content string, tags ...nostr.Tag) *nostr.Event {
	tb.Helper()
	ev := &nostr.Event{CreatedAt: createdAt, Kind: kind, Tags: nostr.Tags(tags), Content: content}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if err := ev.Sign(a.Key); err != nil {
		tb.Fatalf("sign: %v", err)
	}
	return ev
}

// Unsigned returns an event with a correct id and the author's pubkey but a
// placeholder signature. Stores do not verify signatures, so benchmarks use
// it to keep set-up fast; conformance tests use Event.
func (a Author) Unsigned(kind int, createdAt int64, content string, tags ...nostr.Tag) *nostr.Event {
	ev := &nostr.Event{PubKey: a.PubKey, CreatedAt: createdAt, Kind: kind, Tags: nostr.Tags(tags), Content: content}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	ev.ID = ev.ComputeID()
	ev.Sig = strings.Repeat("0", 128)
	return ev
}

// Deletion returns a signed NIP-09 deletion request naming event ids ("e")
// and coordinates ("a", "kind:pubkey:d").
func (a Author) Deletion(tb testing.TB, createdAt int64, ids []string, coords []string) *nostr.Event {
	tb.Helper()
	var tags []nostr.Tag
	for _, id := range ids {
		tags = append(tags, nostr.Tag{"e", id})
	}
	for _, c := range coords {
		tags = append(tags, nostr.Tag{"a", c})
	}
	return a.Event(tb, nostr.KindDeletion, createdAt, "", tags...)
}

// Community maps host in b and returns its id, failing the test on error.
func Community(tb testing.TB, b store.Communities, host string) tenant.CommunityID {
	tb.Helper()
	id, _, err := b.EnsureCommunity(context.Background(), host)
	if err != nil {
		tb.Fatalf("EnsureCommunity(%q): %v", host, err)
	}
	return id
}

// MustSave saves ev and fails the test unless Save returns nil.
func MustSave(tb testing.TB, s store.EventStore, c tenant.CommunityID, ev *nostr.Event) {
	tb.Helper()
	if err := s.Save(context.Background(), c, ev); err != nil {
		tb.Fatalf("Save(kind %d, created_at %d, id %.8s): %v", ev.Kind, ev.CreatedAt, ev.ID, err)
	}
}

// SaveAll saves evs concurrently (so a group-committing backend batches
// them) and fails the test unless every Save returns nil.
func SaveAll(tb testing.TB, s store.EventStore, c tenant.CommunityID, evs []*nostr.Event) {
	tb.Helper()
	errs := make([]error, len(evs))
	var wg sync.WaitGroup
	const workers = 16
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(evs); i += workers {
				if err := s.Save(context.Background(), c, evs[i]); err != nil {
					errs[i] = fmt.Errorf("Save(kind %d, id %.8s): %w", evs[i].Kind, evs[i].ID, err)
				}
			}
		}(w)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
}

// SaveIs saves ev and fails the test unless errors.Is(err, want) (want nil
// means success).
func SaveIs(tb testing.TB, s store.EventStore, c tenant.CommunityID, ev *nostr.Event, want error) {
	tb.Helper()
	err := s.Save(context.Background(), c, ev)
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		tb.Fatalf("Save(kind %d, created_at %d, id %.8s) = %v, want %v", ev.Kind, ev.CreatedAt, ev.ID, err, want)
	}
}

// Collect drains a Query, failing the test on an error.
func Collect(tb testing.TB, seq func(func(store.Record, error) bool)) []store.Record {
	tb.Helper()
	var out []store.Record
	for rec, err := range seq {
		if err != nil {
			tb.Fatalf("query: %v", err)
		}
		out = append(out, rec)
	}
	return out
}

// QueryIDs runs f in c and returns the ids in the order the store yields them.
func QueryIDs(tb testing.TB, s store.EventStore, c tenant.CommunityID, f nostr.Filter) []string {
	tb.Helper()
	recs := Collect(tb, s.Query(context.Background(), c, f))
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

// CountOf runs Count and fails the test on an error.
func CountOf(tb testing.TB, s store.EventStore, c tenant.CommunityID, filters ...nostr.Filter) int64 {
	tb.Helper()
	n, err := s.Count(context.Background(), c, filters)
	if err != nil {
		tb.Fatalf("Count: %v", err)
	}
	return n
}

// Expected returns the ids of the events of corpus that f matches, in store
// order (created_at DESC, id ASC), cut at f.Limit when f.LimitSet: the
// brute-force answer a store's Query must equal.
func Expected(corpus []*nostr.Event, f nostr.Filter) []string {
	var hits []*nostr.Event
	for _, ev := range corpus {
		if search.Matches(&f, ev) {
			hits = append(hits, ev)
		}
	}
	SortEvents(hits)
	if f.LimitSet {
		hits = hits[:max(0, min(len(hits), f.Limit))]
	}
	ids := make([]string, len(hits))
	for i, ev := range hits {
		ids[i] = ev.ID
	}
	return ids
}

// SortEvents sorts newest first, then by lowest id.
func SortEvents(evs []*nostr.Event) {
	slices.SortFunc(evs, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			if a.CreatedAt > b.CreatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Wins reports whether a beats b as the version of a replaceable or
// addressable coordinate: newer created_at, or equal and lower id.
func Wins(a, b *nostr.Event) bool {
	return a.CreatedAt > b.CreatedAt || a.CreatedAt == b.CreatedAt && a.ID < b.ID
}

// Coordinate formats "kind:pubkey:d".
func Coordinate(kind int, pubkey, d string) string {
	return fmt.Sprintf("%d:%s:%s", kind, pubkey, d)
}

// Ptr returns a pointer to v (for Filter.Since and Filter.Until).
func Ptr[T any](v T) *T { return &v }

// Draft is an unsigned event and the author who will sign it.
type Draft struct {
	Author Author
	Event  nostr.Event
}

// SignAll signs drafts in parallel and returns them in order. Signing
// dominates building a large corpus.
func SignAll(tb testing.TB, drafts []Draft) []*nostr.Event {
	tb.Helper()
	out := make([]*nostr.Event, len(drafts))
	errs := make([]error, len(drafts))
	var wg sync.WaitGroup
	const workers = 4
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(drafts); i += workers {
				ev := drafts[i].Event
				if ev.Tags == nil {
					ev.Tags = nostr.Tags{}
				}
				errs[i] = ev.Sign(drafts[i].Author.Key)
				out[i] = &ev
			}
		}(w)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatalf("sign: %v", err)
	}
	return out
}
