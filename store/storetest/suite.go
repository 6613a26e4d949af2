package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Run runs the conformance suite against fresh backends from open, one per
// subtest. Every semantic of the store.EventStore documentation is pinned
// here; a backend passes it unchanged.
func Run(t *testing.T, open func(t *testing.T) store.Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b store.Backend)
	}{
		{"SaveAndQueryByID", testSaveAndQueryByID},
		{"Duplicate", testDuplicate},
		{"RawRoundTrip", testRawRoundTrip},
		{"CommunityIsolation", testCommunityIsolation},
		{"IsolationOfEveryQueryShape", testIsolationOfEveryQueryShape},
		{"Replaceable", testReplaceable},
		{"Addressable", testAddressable},
		{"ReplacementTieLowestIDWins", testReplacementTie},
		{"ConcurrentReplacement", testConcurrentReplacement},
		{"DeleteByID", testDeleteByID},
		{"DeleteByIDBeforeTarget", testDeleteByIDBeforeTarget},
		{"DeleteByCoordinate", testDeleteByCoordinate},
		{"DeleteAimedAtDeletion", testDeleteAimedAtDeletion},
		{"Expiration", testExpiration},
		{"FilterFields", testFilterFields},
		{"NilVersusEmpty", testNilVersusEmpty},
		{"Ordering", testOrdering},
		{"LargeLists", testLargeLists},
		{"Count", testCount},
		{"CountShapes", testCountShapes},
		{"CountEach", testCountEach},
		{"Differential", testDifferential},
		{"ConcurrentSaves", testConcurrentSaves},
		{"ContextCancellation", testContextCancellation},
		{"EarlyStop", testEarlyStop},
		{"Communities", testCommunities},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// base is a fixed past timestamp: the suite's events never expire by accident
// and never depend on the wall clock, except where NIP-40 needs it.
const base int64 = 1_700_000_000

func ctxb() context.Context { return context.Background() }

func wantIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if got == nil {
		got = []string{}
	}
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, short(got), short(want))
	}
}

func short(ids []string) string {
	out := "["
	for i, id := range ids {
		if i > 0 {
			out += " "
		}
		if len(id) > 8 {
			id = id[:8]
		}
		out += id
	}
	return out + "]"
}

func byID(id string) nostr.Filter { return nostr.Filter{IDs: []string{id}} }

func testSaveAndQueryByID(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice := NewAuthor(t)
	ev := alice.Event(t, 1, base, "hello", nostr.Tag{"t", "x"})
	MustSave(t, b, c, ev)
	recs := Collect(t, b.Query(ctxb(), c, byID(ev.ID)))
	if len(recs) != 1 {
		t.Fatalf("query by id: %d records, want 1", len(recs))
	}
	r := recs[0]
	if r.ID != ev.ID || r.CreatedAt != ev.CreatedAt {
		t.Fatalf("record = %s/%d, want %s/%d", r.ID, r.CreatedAt, ev.ID, ev.CreatedAt)
	}
	if want := ev.AppendJSON(nil); !bytes.Equal(r.Raw, want) {
		t.Fatalf("raw:\n got  %s\n want %s", r.Raw, want)
	}
	got, err := nostr.ParseEvent(r.Raw)
	if err != nil || !got.CheckID() {
		t.Fatalf("stored raw does not parse back to a valid event: %v", err)
	}
	if n := CountOf(t, b, c, byID(ev.ID)); n != 1 {
		t.Fatalf("count = %d, want 1", n)
	}
	wantIDs(t, "query unknown id", QueryIDs(t, b, c, byID(alice.Event(t, 1, base, "other").ID)))
}

func testDuplicate(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice := NewAuthor(t)
	ev := alice.Event(t, 1, base, "once")
	MustSave(t, b, c, ev)
	SaveIs(t, b, c, ev, store.ErrDuplicate)
	copyEv := *ev
	SaveIs(t, b, c, &copyEv, store.ErrDuplicate)
	if n := CountOf(t, b, c, nostr.Filter{}); n != 1 {
		t.Fatalf("count after duplicate = %d, want 1", n)
	}
	// A replaceable head saved twice is a duplicate too, not a replacement.
	p := alice.Event(t, 0, base, `{"name":"alice"}`)
	MustSave(t, b, c, p)
	SaveIs(t, b, c, p, store.ErrDuplicate)
	wantIDs(t, "profile after duplicate", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{0}}), p.ID)
}

func testRawRoundTrip(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice := NewAuthor(t)
	var ctl []byte
	for i := 0; i < 0x20; i++ {
		ctl = append(ctl, byte(i))
	}
	ctl = append(ctl, 0x7f)
	contents := []string{
		"",
		`quote " backslash \ slash / tab` + "\t newline\n cr\r bs\b ff\f",
		string(ctl),
		"emoji 🐝🏳️‍🌈 and 𝄞 (non-BMP)",
		"line sep \u2028 para sep \u2029 bom \ufeff nbsp \u00a0",
		"<script>&amp;</script> \u0000 nul",
		"日本語 العربية ελληνικά",
	}
	for i, content := range contents {
		tags := []nostr.Tag{{"t", content}, {"x", "a\"b\\c\u2028d", content}, {"emoji", "🐝"}}
		ev := alice.Event(t, 1, base+int64(i), content, tags...)
		// The wire form a client sent is the canonical JSON; parse it back,
		// store the parsed event and expect those exact bytes out.
		wire := ev.AppendJSON(nil)
		parsed, err := nostr.ParseEvent(wire)
		if err != nil {
			t.Fatalf("content %d: parse own JSON: %v", i, err)
		}
		MustSave(t, b, c, parsed)
		recs := Collect(t, b.Query(ctxb(), c, byID(ev.ID)))
		if len(recs) != 1 || !bytes.Equal(recs[0].Raw, wire) {
			t.Fatalf("content %d: raw round trip differs:\n got  %+v\n want %q", i, recs, wire)
		}
		back, err := nostr.ParseEvent(recs[0].Raw)
		if err != nil || back.Content != content || !back.CheckID() {
			t.Fatalf("content %d: stored event does not parse back identically (%v)", i, err)
		}
		// The tag value with unusual characters is searchable exactly.
		wantIDs(t, fmt.Sprintf("content %d: #t", i), QueryIDs(t, b, c, nostr.Filter{Tags: map[string][]string{"t": {content}}}), ev.ID)
		wantIDs(t, fmt.Sprintf("content %d: #x", i), QueryIDs(t, b, c, nostr.Filter{IDs: []string{ev.ID}, Tags: map[string][]string{"x": {"a\"b\\c\u2028d"}}}), ev.ID)
	}
}

// testCommunityIsolation: one event id in two communities is two events.
func testCommunityIsolation(t *testing.T, b store.Backend) {
	a := Community(t, b, "a.example")
	bb := Community(t, b, "b.example")
	if a == bb {
		t.Fatal("two hosts share a community id")
	}
	alice := NewAuthor(t)
	ev := alice.Event(t, 1, base, "same event, two communities", nostr.Tag{"t", "x"})
	MustSave(t, b, a, ev)
	wantIDs(t, "B before its own save", QueryIDs(t, b, bb, byID(ev.ID)))
	MustSave(t, b, bb, ev) // not a duplicate: B never held it
	SaveIs(t, b, bb, ev, store.ErrDuplicate)
	wantIDs(t, "A", QueryIDs(t, b, a, byID(ev.ID)), ev.ID)
	wantIDs(t, "B", QueryIDs(t, b, bb, byID(ev.ID)), ev.ID)

	// Deleting in A leaves B alone, and the tombstone refuses in A only.
	MustSave(t, b, a, alice.Deletion(t, base+1, []string{ev.ID}, nil))
	wantIDs(t, "A after delete", QueryIDs(t, b, a, byID(ev.ID)))
	wantIDs(t, "B after A's delete", QueryIDs(t, b, bb, byID(ev.ID)), ev.ID)
	SaveIs(t, b, a, ev, store.ErrDeleted)
	SaveIs(t, b, bb, ev, store.ErrDuplicate)

	// A deletion request stored in B alone does not refuse the id in A.
	ev2 := alice.Event(t, 1, base+2, "second")
	MustSave(t, b, bb, alice.Deletion(t, base+3, []string{ev2.ID}, nil))
	MustSave(t, b, a, ev2)
	SaveIs(t, b, bb, ev2, store.ErrDeleted)

	// Replacement is per community: a newer profile in B does not supersede
	// an older one in A.
	newer := alice.Event(t, 0, base+20, "new profile")
	older := alice.Event(t, 0, base+10, "old profile")
	MustSave(t, b, bb, newer)
	MustSave(t, b, a, older)
	wantIDs(t, "A profile", QueryIDs(t, b, a, nostr.Filter{Kinds: []int{0}}), older.ID)
	wantIDs(t, "B profile", QueryIDs(t, b, bb, nostr.Filter{Kinds: []int{0}}), newer.ID)

	// A coordinate watermark is per community too.
	art := alice.Event(t, 30023, base+5, "article", nostr.Tag{"d", "post"})
	MustSave(t, b, bb, alice.Deletion(t, base+50, nil, []string{Coordinate(30023, alice.PubKey, "post")}))
	MustSave(t, b, a, art)
	SaveIs(t, b, bb, art, store.ErrDeleted)

	kinds := nostr.Filter{Kinds: []int{0, 1, 30023}}
	if n := CountOf(t, b, a, kinds); n != 3 { // ev2, older, art
		t.Fatalf("A holds %d kind 0/1/30023 events, want 3", n)
	}
	if n := CountOf(t, b, bb, kinds); n != 2 { // ev, newer
		t.Fatalf("B holds %d kind 0/1/30023 events, want 2", n)
	}
}

// testIsolationOfEveryQueryShape fills two communities with look-alike data
// (same authors, kinds, tags, timestamps) and checks every filter field,
// Count and limits return only the asked community's events.
func testIsolationOfEveryQueryShape(t *testing.T, b store.Backend) {
	a := Community(t, b, "a.example")
	bb := Community(t, b, "b.example")
	authors := NewAuthors(t, 2)
	target := authors[0].Event(t, 1, base, "thread root")
	var inA, inB []*nostr.Event
	for i := 0; i < 6; i++ {
		au := authors[i%2]
		tags := []nostr.Tag{{"e", target.ID}, {"p", authors[1-i%2].PubKey}, {"t", "go"}, {"d", "x"}, {"P", authors[0].PubKey}}
		evA := au.Event(t, 1, base+int64(i), fmt.Sprintf("A %d", i), tags...)
		evB := au.Event(t, 1, base+int64(i), fmt.Sprintf("B %d", i), tags...)
		MustSave(t, b, a, evA)
		MustSave(t, b, bb, evB)
		inA = append(inA, evA)
		inB = append(inB, evB)
	}
	MustSave(t, b, a, target)
	inA = append(inA, target)
	filters := []nostr.Filter{
		{},
		{IDs: []string{inA[0].ID, inB[0].ID, target.ID}},
		{Authors: []string{authors[0].PubKey, authors[1].PubKey}},
		{Kinds: []int{1}},
		{Tags: map[string][]string{"e": {target.ID}}},
		{Tags: map[string][]string{"p": {authors[0].PubKey, authors[1].PubKey}}},
		{Tags: map[string][]string{"t": {"go"}}},
		{Tags: map[string][]string{"d": {"x"}}},
		{Tags: map[string][]string{"P": {authors[0].PubKey}}},
		{Since: Ptr(base + 2), Until: Ptr(base + 4)},
		{Kinds: []int{1}, Limit: 3, LimitSet: true},
		{Authors: []string{authors[1].PubKey}, Kinds: []int{1}, Tags: map[string][]string{"t": {"go"}}, Limit: 2, LimitSet: true},
	}
	for i, f := range filters {
		wantIDs(t, fmt.Sprintf("A filter %d", i), QueryIDs(t, b, a, f), Expected(inA, f)...)
		wantIDs(t, fmt.Sprintf("B filter %d", i), QueryIDs(t, b, bb, f), Expected(inB, f)...)
		f.LimitSet, f.Limit = false, 0
		if n := CountOf(t, b, a, f); n != int64(len(Expected(inA, f))) {
			t.Fatalf("A count %d = %d, want %d", i, n, len(Expected(inA, f)))
		}
		if n := CountOf(t, b, bb, f); n != int64(len(Expected(inB, f))) {
			t.Fatalf("B count %d = %d, want %d", i, n, len(Expected(inB, f)))
		}
	}
	// A community that exists but holds nothing sees nothing.
	empty := Community(t, b, "empty.example")
	for i, f := range filters {
		wantIDs(t, fmt.Sprintf("empty community filter %d", i), QueryIDs(t, b, empty, f))
	}
	if n := CountOf(t, b, empty, nostr.Filter{}); n != 0 {
		t.Fatalf("empty community count = %d", n)
	}
}

func testReplaceable(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice, bob := NewAuthor(t), NewAuthor(t)
	for _, kind := range []int{0, 3, 10000, 10002, 19999} {
		v1 := alice.Event(t, kind, base+10, "v1")
		v2 := alice.Event(t, kind, base+20, "v2")
		v0 := alice.Event(t, kind, base+5, "v0")
		other := bob.Event(t, kind, base+1, "bob's")
		MustSave(t, b, c, v1)
		MustSave(t, b, c, other)
		MustSave(t, b, c, v2) // newer replaces
		f := nostr.Filter{Authors: []string{alice.PubKey}, Kinds: []int{kind}}
		wantIDs(t, fmt.Sprintf("kind %d head", kind), QueryIDs(t, b, c, f), v2.ID)
		wantIDs(t, fmt.Sprintf("kind %d replaced version by id", kind), QueryIDs(t, b, c, byID(v1.ID)))
		SaveIs(t, b, c, v0, store.ErrSuperseded) // older incoming changes nothing
		SaveIs(t, b, c, v1, store.ErrSuperseded) // a replaced version cannot return
		wantIDs(t, fmt.Sprintf("kind %d head after older", kind), QueryIDs(t, b, c, f), v2.ID)
		wantIDs(t, fmt.Sprintf("kind %d older by id", kind), QueryIDs(t, b, c, byID(v0.ID)))
		wantIDs(t, fmt.Sprintf("kind %d other author", kind), QueryIDs(t, b, c, nostr.Filter{Authors: []string{bob.PubKey}, Kinds: []int{kind}}), other.ID)
		if n := CountOf(t, b, c, nostr.Filter{Kinds: []int{kind}}); n != 2 {
			t.Fatalf("kind %d count = %d, want 2", kind, n)
		}
	}
	// A "d" tag on a replaceable kind does not split it into coordinates.
	d1 := alice.Event(t, 10050, base+1, "", nostr.Tag{"d", "one"})
	d2 := alice.Event(t, 10050, base+2, "", nostr.Tag{"d", "two"})
	MustSave(t, b, c, d1)
	MustSave(t, b, c, d2)
	wantIDs(t, "replaceable with d tags", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{10050}}), d2.ID)
	// Regular kinds are never replaced.
	n1 := alice.Event(t, 1, base+1, "a")
	n2 := alice.Event(t, 1, base+2, "b")
	MustSave(t, b, c, n1)
	MustSave(t, b, c, n2)
	wantIDs(t, "regular kind", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{1}}), n2.ID, n1.ID)
}

func testAddressable(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice, bob := NewAuthor(t), NewAuthor(t)
	const k = 30023
	aOld := alice.Event(t, k, base+10, "a old", nostr.Tag{"d", "a"})
	aNew := alice.Event(t, k, base+20, "a new", nostr.Tag{"d", "a"})
	bOnly := alice.Event(t, k, base+15, "b", nostr.Tag{"d", "b"})
	noD := alice.Event(t, k, base+30, "no d tag")
	emptyD := alice.Event(t, k, base+40, "empty d", nostr.Tag{"d", ""})
	olderEmpty := alice.Event(t, k, base+35, "older, no d")
	otherKind := alice.Event(t, 30024, base+1, "other kind", nostr.Tag{"d", "a"})
	bobs := bob.Event(t, k, base+1, "bob's a", nostr.Tag{"d", "a"})
	MustSave(t, b, c, aOld)
	MustSave(t, b, c, bOnly)
	MustSave(t, b, c, aNew)
	MustSave(t, b, c, noD)
	MustSave(t, b, c, emptyD) // missing d == empty d: replaces noD
	SaveIs(t, b, c, olderEmpty, store.ErrSuperseded)
	SaveIs(t, b, c, aOld, store.ErrSuperseded)
	MustSave(t, b, c, otherKind)
	MustSave(t, b, c, bobs)
	wantIDs(t, "alice's heads", QueryIDs(t, b, c, nostr.Filter{Authors: []string{alice.PubKey}, Kinds: []int{k}}),
		emptyD.ID, aNew.ID, bOnly.ID)
	wantIDs(t, "#d a", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{k}, Tags: map[string][]string{"d": {"a"}}}), aNew.ID, bobs.ID)
	wantIDs(t, "#d empty", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{k}, Tags: map[string][]string{"d": {""}}}), emptyD.ID)
	wantIDs(t, "replaced by id", QueryIDs(t, b, c, nostr.Filter{IDs: []string{aOld.ID, noD.ID, olderEmpty.ID}}))
	wantIDs(t, "other kind", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{30024}}), otherKind.ID)
	// Only the first d tag names the coordinate.
	two := alice.Event(t, k, base+50, "two d tags", nostr.Tag{"d", "b"}, nostr.Tag{"d", "a"})
	MustSave(t, b, c, two)
	wantIDs(t, "first d wins", QueryIDs(t, b, c, nostr.Filter{Authors: []string{alice.PubKey}, Kinds: []int{k}}),
		two.ID, emptyD.ID, aNew.ID)
}

func testReplacementTie(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice := NewAuthor(t)
	for _, kind := range []int{0, 30000} {
		x := alice.Event(t, kind, base, "x", nostr.Tag{"d", "t"})
		y := alice.Event(t, kind, base, "y", nostr.Tag{"d", "t"})
		low, high := x, y
		if high.ID < low.ID {
			low, high = high, low
		}
		f := nostr.Filter{Kinds: []int{kind}}
		MustSave(t, b, c, high)
		MustSave(t, b, c, low) // equal created_at, lower id: replaces
		wantIDs(t, fmt.Sprintf("kind %d tie", kind), QueryIDs(t, b, c, f), low.ID)
		SaveIs(t, b, c, high, store.ErrSuperseded)
		wantIDs(t, fmt.Sprintf("kind %d tie after retry", kind), QueryIDs(t, b, c, f), low.ID)
	}
}

func testConcurrentReplacement(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice := NewAuthor(t)
	const workers, per = 8, 12
	var drafts []Draft
	for i := 0; i < workers*per; i++ {
		// Few distinct timestamps, so ties (lowest id wins) are exercised.
		ts := base + int64((i*7919)%17)
		drafts = append(drafts,
			Draft{alice, nostr.Event{Kind: 10002, CreatedAt: ts, Content: fmt.Sprint("r", i)}},
			Draft{alice, nostr.Event{Kind: 30023, CreatedAt: ts, Content: fmt.Sprint("a", i), Tags: nostr.Tags{{"d", "race"}}}})
	}
	evs := SignAll(t, drafts)
	var wg sync.WaitGroup
	errs := make(chan error, len(evs))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(evs); i += workers {
				err := b.Save(ctxb(), c, evs[i])
				if err != nil && !errors.Is(err, store.ErrSuperseded) {
					errs <- fmt.Errorf("event %d: %w", i, err)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, kind := range []int{10002, 30023} {
		var best *nostr.Event
		for _, ev := range evs {
			if ev.Kind == kind && (best == nil || Wins(ev, best)) {
				best = ev
			}
		}
		wantIDs(t, fmt.Sprintf("kind %d live head", kind), QueryIDs(t, b, c, nostr.Filter{Kinds: []int{kind}}), best.ID)
		if n := CountOf(t, b, c, nostr.Filter{Kinds: []int{kind}}); n != 1 {
			t.Fatalf("kind %d: %d live versions, want 1", kind, n)
		}
	}
}

func testDeleteByID(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice, mallory := NewAuthor(t), NewAuthor(t)
	mine := alice.Event(t, 1, base, "mine", nostr.Tag{"t", "x"})
	keep := alice.Event(t, 1, base+1, "keep")
	theirs := mallory.Event(t, 1, base+2, "mallory's")
	MustSave(t, b, c, mine)
	MustSave(t, b, c, keep)
	MustSave(t, b, c, theirs)

	del := alice.Deletion(t, base+10, []string{mine.ID, theirs.ID}, nil)
	MustSave(t, b, c, del)
	wantIDs(t, "deleted by id", QueryIDs(t, b, c, byID(mine.ID)))
	wantIDs(t, "deleted by tag", QueryIDs(t, b, c, nostr.Filter{Tags: map[string][]string{"t": {"x"}}}))
	wantIDs(t, "other author's target untouched", QueryIDs(t, b, c, byID(theirs.ID)), theirs.ID)
	wantIDs(t, "unnamed event untouched", QueryIDs(t, b, c, byID(keep.ID)), keep.ID)
	wantIDs(t, "deletion request stored", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{5}}), del.ID)
	wantIDs(t, "deletion request by #e", QueryIDs(t, b, c, nostr.Filter{Tags: map[string][]string{"e": {mine.ID}}}), del.ID)
	if n := CountOf(t, b, c, nostr.Filter{Kinds: []int{1}}); n != 2 {
		t.Fatalf("count after delete = %d, want 2", n)
	}
	SaveIs(t, b, c, mine, store.ErrDeleted)
	SaveIs(t, b, c, del, store.ErrDuplicate)
	SaveIs(t, b, c, theirs, store.ErrDuplicate)

	// Deleting a replaceable head by id removes it.
	prof := alice.Event(t, 0, base, "profile")
	MustSave(t, b, c, prof)
	MustSave(t, b, c, alice.Deletion(t, base+11, []string{prof.ID}, nil))
	wantIDs(t, "deleted profile", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{0}}))
	SaveIs(t, b, c, prof, store.ErrDeleted)
}

func testDeleteByIDBeforeTarget(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice, mallory := NewAuthor(t), NewAuthor(t)
	late := alice.Event(t, 1, base, "arrives after its deletion")
	MustSave(t, b, c, alice.Deletion(t, base+1, []string{late.ID}, nil))
	SaveIs(t, b, c, late, store.ErrDeleted)
	wantIDs(t, "late target", QueryIDs(t, b, c, byID(late.ID)))

	// Someone else's request naming alice's future event has no effect.
	victim := alice.Event(t, 1, base+2, "victim")
	MustSave(t, b, c, mallory.Deletion(t, base+3, []string{victim.ID}, nil))
	MustSave(t, b, c, victim)
	wantIDs(t, "victim", QueryIDs(t, b, c, byID(victim.ID)), victim.ID)
}

func testDeleteByCoordinate(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice, mallory := NewAuthor(t), NewAuthor(t)
	const k = 30023
	coordA := Coordinate(k, alice.PubKey, "a")
	v10 := alice.Event(t, k, base+10, "v10", nostr.Tag{"d", "a"})
	other := alice.Event(t, k, base+10, "other d", nostr.Tag{"d", "b"})
	MustSave(t, b, c, v10)
	MustSave(t, b, c, other)

	// Mallory cannot delete alice's coordinate.
	MustSave(t, b, c, mallory.Deletion(t, base+100, nil, []string{coordA}))
	wantIDs(t, "after mallory's a-deletion", QueryIDs(t, b, c, byID(v10.ID)), v10.ID)

	// A request at created_at 20 removes versions ≤ 20.
	MustSave(t, b, c, alice.Deletion(t, base+20, nil, []string{coordA}))
	wantIDs(t, "deleted coordinate", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{k}, Tags: map[string][]string{"d": {"a"}}}))
	wantIDs(t, "other d untouched", QueryIDs(t, b, c, byID(other.ID)), other.ID)
	SaveIs(t, b, c, alice.Event(t, k, base+15, "late older", nostr.Tag{"d", "a"}), store.ErrDeleted)
	SaveIs(t, b, c, alice.Event(t, k, base+20, "late equal", nostr.Tag{"d", "a"}), store.ErrDeleted)
	SaveIs(t, b, c, v10, store.ErrDeleted)
	newer := alice.Event(t, k, base+21, "newer", nostr.Tag{"d", "a"})
	MustSave(t, b, c, newer)
	wantIDs(t, "newer version", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{k}, Tags: map[string][]string{"d": {"a"}}}), newer.ID)

	// A request older than the live head keeps the head, and an older
	// watermark never lowers a higher one.
	MustSave(t, b, c, alice.Deletion(t, base+5, nil, []string{coordA}))
	wantIDs(t, "head newer than request", QueryIDs(t, b, c, byID(newer.ID)), newer.ID)
	SaveIs(t, b, c, alice.Event(t, k, base+19, "still below the first watermark", nostr.Tag{"d", "a"}), store.ErrDeleted)

	// Replaceable kinds have the coordinate "kind:pubkey:".
	prof := alice.Event(t, 0, base+10, "profile")
	MustSave(t, b, c, prof)
	MustSave(t, b, c, alice.Deletion(t, base+10, nil, []string{Coordinate(0, alice.PubKey, "")}))
	wantIDs(t, "deleted profile", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{0}}))
	SaveIs(t, b, c, alice.Event(t, 0, base+9, "older profile"), store.ErrDeleted)
	p2 := alice.Event(t, 0, base+11, "newer profile")
	MustSave(t, b, c, p2)
	wantIDs(t, "newer profile", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{0}}), p2.ID)
	// A replaceable kind has one slot per author: a coordinate naming it
	// with a d part names that slot.
	relays := alice.Event(t, 10002, base+10, "relays")
	MustSave(t, b, c, relays)
	MustSave(t, b, c, alice.Deletion(t, base+10, nil, []string{Coordinate(10002, alice.PubKey, "x")}))
	wantIDs(t, "deleted relay list", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{10002}}))
	SaveIs(t, b, c, alice.Event(t, 10002, base+9, "older relays"), store.ErrDeleted)

	// A coordinate deletion arriving before any version still holds.
	MustSave(t, b, c, alice.Deletion(t, base+30, nil, []string{Coordinate(k, alice.PubKey, "future")}))
	SaveIs(t, b, c, alice.Event(t, k, base+30, "too old", nostr.Tag{"d", "future"}), store.ErrDeleted)
	MustSave(t, b, c, alice.Event(t, k, base+31, "fine", nostr.Tag{"d", "future"}))
	// Missing d equals empty d for the watermark too.
	MustSave(t, b, c, alice.Deletion(t, base+30, nil, []string{Coordinate(k, alice.PubKey, "")}))
	SaveIs(t, b, c, alice.Event(t, k, base+29, "no d"), store.ErrDeleted)
}

func testDeleteAimedAtDeletion(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice := NewAuthor(t)
	note := alice.Event(t, 1, base, "note")
	MustSave(t, b, c, note)
	d1 := alice.Deletion(t, base+1, []string{note.ID}, nil)
	MustSave(t, b, c, d1)
	d2 := alice.Deletion(t, base+2, []string{d1.ID}, nil)
	MustSave(t, b, c, d2)
	wantIDs(t, "deletion requests", QueryIDs(t, b, c, nostr.Filter{Kinds: []int{5}}), d2.ID, d1.ID)
	SaveIs(t, b, c, note, store.ErrDeleted) // undeleting is not a thing

	// Aimed at a deletion request that has not arrived yet: still no effect.
	d3 := alice.Deletion(t, base+3, []string{note.ID}, nil)
	MustSave(t, b, c, alice.Deletion(t, base+4, []string{d3.ID}, nil))
	MustSave(t, b, c, d3)
	wantIDs(t, "late deletion request", QueryIDs(t, b, c, byID(d3.ID)), d3.ID)
}

func testExpiration(t *testing.T, b store.Backend) {
	a := Community(t, b, "a.example")
	bb := Community(t, b, "b.example")
	alice := NewAuthor(t)
	now := time.Now().Unix()
	exp := func(ts int64) nostr.Tag { return nostr.Tag{"expiration", fmt.Sprint(ts)} }
	past := alice.Event(t, 1, now-100, "expired", exp(now-10))
	future := alice.Event(t, 1, now-100, "expires later", exp(now+3600))
	far := alice.Event(t, 1, now-100, "expires much later", exp(now+7200))
	plain := alice.Event(t, 1, now-100, "no expiration")
	bad := alice.Event(t, 1, now-100, "malformed expiration", nostr.Tag{"expiration", "soon"})
	for _, ev := range []*nostr.Event{past, future, far, plain, bad} {
		MustSave(t, b, a, ev)
	}
	pastB := alice.Event(t, 1, now-100, "expired in B", exp(now-10))
	MustSave(t, b, bb, pastB)

	all := nostr.Filter{Kinds: []int{1}}
	live := Expected([]*nostr.Event{future, far, plain, bad}, all)
	wantIDs(t, "live before sweep", QueryIDs(t, b, a, all), live...)
	wantIDs(t, "expired by id", QueryIDs(t, b, a, byID(past.ID)))
	// Limited reads driven by an index (kinds, authors, the timeline)
	// skip the expired event too.
	for name, f := range map[string]nostr.Filter{
		"kind, limit":     {Kinds: []int{1}, Limit: 10, LimitSet: true},
		"author, limit":   {Authors: []string{alice.PubKey}, Limit: 10, LimitSet: true},
		"timeline, limit": {Limit: 10, LimitSet: true},
		"authors+kinds":   {Authors: []string{alice.PubKey, NewAuthor(t).PubKey}, Kinds: []int{1, 7}, Limit: 10, LimitSet: true},
	} {
		wantIDs(t, "live before sweep, "+name, QueryIDs(t, b, a, f), live...)
	}
	if n := CountOf(t, b, a, all); n != 4 {
		t.Fatalf("count = %d, want 4", n)
	}
	if n := CountOf(t, b, bb, all); n != 0 {
		t.Fatalf("B count = %d, want 0", n)
	}
	n, err := b.DeleteExpired(ctxb(), time.Unix(now, 0))
	if err != nil || n != 2 {
		t.Fatalf("DeleteExpired(now) = %d, %v; want 2 (one per community)", n, err)
	}
	n, err = b.DeleteExpired(ctxb(), time.Unix(now, 0))
	if err != nil || n != 0 {
		t.Fatalf("second DeleteExpired(now) = %d, %v; want 0", n, err)
	}
	n, err = b.DeleteExpired(ctxb(), time.Unix(now+3600, 0)) // "at or before"
	if err != nil || n != 1 {
		t.Fatalf("DeleteExpired(now+1h) = %d, %v; want 1", n, err)
	}
	wantIDs(t, "after sweeps", QueryIDs(t, b, a, all), Expected([]*nostr.Event{far, plain, bad}, all)...)
	SaveIs(t, b, a, plain, store.ErrDuplicate)
}

// corpus for field-by-field checks.
type fieldCorpus struct {
	alice, bob, carol Author
	evs               []*nostr.Event
}

func testFilterFields(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	other := Community(t, b, "b.example")
	fc := fieldCorpus{alice: NewAuthor(t), bob: NewAuthor(t), carol: NewAuthor(t)}
	root := fc.alice.Event(t, 1, base, "root", nostr.Tag{"t", "nostr"})
	fc.evs = append(fc.evs,
		root,
		fc.bob.Event(t, 1, base+1, "reply", nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"p", fc.alice.PubKey}),
		fc.carol.Event(t, 7, base+2, "+", nostr.Tag{"e", root.ID}, nostr.Tag{"p", fc.alice.PubKey}, nostr.Tag{"k", "1"}),
		fc.alice.Event(t, 1, base+3, "tags", nostr.Tag{"t", "go"}, nostr.Tag{"t", "nostr"}, nostr.Tag{"E", root.ID}, nostr.Tag{"P", fc.bob.PubKey}),
		fc.bob.Event(t, 30023, base+4, "article", nostr.Tag{"d", "intro"}, nostr.Tag{"t", "go"}),
		fc.carol.Event(t, 1, base+5, "only name tag", nostr.Tag{"t"}, nostr.Tag{"client", "x"}),
		fc.carol.Event(t, 1111, base+5, "same second", nostr.Tag{"e", root.ID}),
		fc.alice.Event(t, 0, base+6, "profile"),
	)
	for _, ev := range fc.evs {
		MustSave(t, b, c, ev)
		// Look-alike noise in another community must never show up.
		MustSave(t, b, other, ev)
	}
	MustSave(t, b, other, fc.alice.Event(t, 1, base+3, "noise", nostr.Tag{"t", "go"}))
	filters := map[string]nostr.Filter{
		"all":            {},
		"ids":            {IDs: []string{root.ID, fc.evs[4].ID}},
		"ids unknown":    {IDs: []string{fc.alice.Event(t, 1, base, "never saved").ID}},
		"authors":        {Authors: []string{fc.bob.PubKey}},
		"authors two":    {Authors: []string{fc.bob.PubKey, fc.carol.PubKey}},
		"kinds":          {Kinds: []int{1}},
		"kinds two":      {Kinds: []int{7, 30023}},
		"kind unused":    {Kinds: []int{9999}},
		"author+kind":    {Authors: []string{fc.alice.PubKey}, Kinds: []int{1}},
		"#e":             {Tags: map[string][]string{"e": {root.ID}}},
		"#p":             {Tags: map[string][]string{"p": {fc.alice.PubKey}}},
		"#t one":         {Tags: map[string][]string{"t": {"go"}}},
		"#t either":      {Tags: map[string][]string{"t": {"go", "nostr"}}},
		"#d":             {Tags: map[string][]string{"d": {"intro"}}},
		"#k":             {Tags: map[string][]string{"k": {"1"}}},
		"#E uppercase":   {Tags: map[string][]string{"E": {root.ID}}},
		"#P uppercase":   {Tags: map[string][]string{"P": {fc.bob.PubKey}}},
		"#e and #p":      {Tags: map[string][]string{"e": {root.ID}, "p": {fc.alice.PubKey}}},
		"#t no value":    {Tags: map[string][]string{"t": {""}}},
		"since":          {Since: Ptr(base + 4)},
		"until":          {Until: Ptr(base + 1)},
		"since=until":    {Since: Ptr(base + 5), Until: Ptr(base + 5)},
		"since>until":    {Since: Ptr(base + 5), Until: Ptr(base + 4)},
		"limit 1":        {Limit: 1, LimitSet: true},
		"limit 3 kinds":  {Kinds: []int{1, 1111}, Limit: 3, LimitSet: true},
		"limit huge":     {Limit: 1 << 30, LimitSet: true},
		"limit 0":        {Limit: 0, LimitSet: true},
		"limit 0 by id":  {IDs: []string{root.ID}, Limit: 0, LimitSet: true},
		"everything set": {IDs: []string{fc.evs[1].ID, fc.evs[2].ID}, Authors: []string{fc.bob.PubKey}, Kinds: []int{1}, Tags: map[string][]string{"p": {fc.alice.PubKey}}, Since: Ptr(base), Until: Ptr(base + 1), Limit: 5, LimitSet: true},
		"multi-letter":   {Tags: map[string][]string{"client": {"x"}}},
		"nil tag values": {Tags: map[string][]string{"t": nil}, Kinds: []int{7}},
	}
	for name, f := range filters {
		wantIDs(t, name, QueryIDs(t, b, c, f), Expected(fc.evs, f)...)
		f.LimitSet, f.Limit = false, 0
		if n, want := CountOf(t, b, c, f), len(Expected(fc.evs, f)); n != int64(want) {
			t.Fatalf("%s: count = %d, want %d", name, n, want)
		}
	}
}

func testNilVersusEmpty(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice := NewAuthor(t)
	ev := alice.Event(t, 1, base, "x", nostr.Tag{"t", "x"})
	MustSave(t, b, c, ev)
	cases := map[string]struct {
		f    nostr.Filter
		want int
	}{
		"nil ids":          {nostr.Filter{IDs: nil}, 1},
		"empty ids":        {nostr.Filter{IDs: []string{}}, 0},
		"nil authors":      {nostr.Filter{Authors: nil}, 1},
		"empty authors":    {nostr.Filter{Authors: []string{}}, 0},
		"nil kinds":        {nostr.Filter{Kinds: nil}, 1},
		"empty kinds":      {nostr.Filter{Kinds: []int{}}, 0},
		"nil tags map":     {nostr.Filter{Tags: nil}, 1},
		"empty tags map":   {nostr.Filter{Tags: map[string][]string{}}, 1},
		"empty tag values": {nostr.Filter{Tags: map[string][]string{"t": {}}}, 0},
		"nil tag values":   {nostr.Filter{Tags: map[string][]string{"t": nil}}, 1},
	}
	for name, tc := range cases {
		if got := len(QueryIDs(t, b, c, tc.f)); got != tc.want {
			t.Fatalf("%s: %d results, want %d", name, got, tc.want)
		}
		if got := CountOf(t, b, c, tc.f); got != int64(tc.want) {
			t.Fatalf("%s: count %d, want %d", name, got, tc.want)
		}
	}
}

func testOrdering(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	authors := NewAuthors(t, 3)
	var drafts []Draft
	for i := 0; i < 40; i++ {
		drafts = append(drafts, Draft{authors[i%3], nostr.Event{Kind: 1, CreatedAt: base + int64(i%4), Content: fmt.Sprint(i)}})
	}
	evs := SignAll(t, drafts)
	// Save in an order unrelated to the expected one.
	for i := len(evs) - 1; i >= 0; i -= 2 {
		MustSave(t, b, c, evs[i])
	}
	for i := 0; i < len(evs); i += 2 {
		MustSave(t, b, c, evs[i])
	}
	got := Collect(t, b.Query(ctxb(), c, nostr.Filter{}))
	want := Expected(evs, nostr.Filter{})
	ids := make([]string, len(got))
	for i, r := range got {
		ids[i] = r.ID
		if i > 0 {
			p := got[i-1]
			if p.CreatedAt < r.CreatedAt || p.CreatedAt == r.CreatedAt && p.ID >= r.ID {
				t.Fatalf("records %d and %d out of order", i-1, i)
			}
		}
	}
	wantIDs(t, "order", ids, want...)
	for limit := 1; limit <= 12; limit += 3 {
		f := nostr.Filter{Limit: limit, LimitSet: true}
		wantIDs(t, fmt.Sprintf("limit %d", limit), QueryIDs(t, b, c, f), Expected(evs, f)...)
	}
}

func testLargeLists(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	authors := NewAuthors(t, 30)
	var drafts []Draft
	for i := 0; i < 300; i++ {
		drafts = append(drafts, Draft{authors[i%len(authors)], nostr.Event{Kind: 1, CreatedAt: base + int64(i), Content: fmt.Sprint(i), Tags: nostr.Tags{{"t", fmt.Sprint("tag", i)}}}})
	}
	evs := SignAll(t, drafts)
	SaveAll(t, b, c, evs)
	var ids, pks, tags []string
	for i, ev := range evs {
		if i%2 == 0 {
			ids = append(ids, ev.ID)
			tags = append(tags, fmt.Sprint("tag", i))
		}
	}
	for i := 0; i < 1500; i++ { // ids that exist nowhere
		ids = append(ids, fmt.Sprintf("%064x", i+1))
		pks = append(pks, fmt.Sprintf("%064x", i+1))
		tags = append(tags, fmt.Sprint("missing", i))
	}
	for _, a := range authors[:20] {
		pks = append(pks, a.PubKey)
	}
	for name, f := range map[string]nostr.Filter{
		"ids":          {IDs: ids},
		"authors":      {Authors: pks},
		"ids+authors":  {IDs: ids, Authors: pks, Limit: 50, LimitSet: true},
		"tags":         {Tags: map[string][]string{"t": tags}},
		"kinds":        {Kinds: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}},
		"uppercase id": {IDs: []string{"A" + evs[0].ID[1:]}},
	} {
		wantIDs(t, name, QueryIDs(t, b, c, f), Expected(evs, f)...)
		if n, want := CountOf(t, b, c, f), len(Expected(evs, nostr.Filter{IDs: f.IDs, Authors: f.Authors, Tags: f.Tags, Kinds: f.Kinds})); n != int64(want) {
			t.Fatalf("%s: count %d, want %d", name, n, want)
		}
	}
}

func testCount(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice, bob := NewAuthor(t), NewAuthor(t)
	var evs []*nostr.Event
	for i := 0; i < 10; i++ {
		au := alice
		if i%2 == 1 {
			au = bob
		}
		ev := au.Event(t, []int{1, 2, 4}[i%3], base+int64(i), fmt.Sprint(i))
		MustSave(t, b, c, ev)
		evs = append(evs, ev)
	}
	fa := nostr.Filter{Authors: []string{alice.PubKey}, Limit: 1, LimitSet: true}
	fk := nostr.Filter{Kinds: []int{1}, Limit: 0, LimitSet: true}
	distinct := map[string]bool{}
	for _, ev := range evs {
		if ev.PubKey == alice.PubKey || ev.Kind == 1 {
			distinct[ev.ID] = true
		}
	}
	if n := CountOf(t, b, c, fa, fk, fa); n != int64(len(distinct)) {
		t.Fatalf("OR-ed count = %d, want %d distinct", n, len(distinct))
	}
	if n := CountOf(t, b, c); n != 0 {
		t.Fatalf("count of no filters = %d, want 0", n)
	}
	if n := CountOf(t, b, c, nostr.Filter{Kinds: []int{}}); n != 0 {
		t.Fatalf("count of an empty kinds filter = %d, want 0", n)
	}
	if n := CountOf(t, b, c, nostr.Filter{Kinds: []int{}}, nostr.Filter{Authors: []string{bob.PubKey}}); n != 5 {
		t.Fatalf("count = %d, want 5", n)
	}
}

// testCountShapes counts each shape a store may answer from an index alone
// (an author, one tag value with a time range, a tag with kinds none of the
// community's events has) before and after the community holds an event
// that must not be counted: an expired one not yet swept. Another
// community's events never count.
func testCountShapes(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	other := Community(t, b, "b.example")
	alice, bob := NewAuthor(t), NewAuthor(t)
	root := alice.Event(t, 1, base, "root", nostr.Tag{"t", "go"})
	var evs []*nostr.Event
	evs = append(evs, root)
	for i := 1; i <= 12; i++ {
		au := alice
		if i%3 == 0 {
			au = bob
		}
		tags := []nostr.Tag{{"e", root.ID}}
		if i%2 == 0 {
			tags = append(tags, nostr.Tag{"t", "go"})
		}
		evs = append(evs, au.Event(t, []int{1, 7}[i%2], base+int64(i), fmt.Sprint(i), tags...))
	}
	SaveAll(t, b, c, evs)
	// The same shapes in another community, which must not count.
	for i := 0; i < 3; i++ {
		MustSave(t, b, other, alice.Event(t, 1, base+int64(i), "elsewhere", nostr.Tag{"e", root.ID}, nostr.Tag{"t", "go"}))
	}
	shapes := map[string][]nostr.Filter{
		"author":              {{Authors: []string{alice.PubKey}}},
		"author+kind":         {{Authors: []string{bob.PubKey}, Kinds: []int{1}}},
		"tag":                 {{Tags: map[string][]string{"e": {root.ID}}}},
		"tag twice":           {{Tags: map[string][]string{"e": {root.ID, root.ID}}}},
		"tag+since+until":     {{Tags: map[string][]string{"e": {root.ID}}, Since: ptr(base + 3), Until: ptr(base + 8)}},
		"tag+kind":            {{Kinds: []int{1}, Tags: map[string][]string{"t": {"go"}}}},
		"tag+absent kind":     {{Kinds: []int{1059}, Tags: map[string][]string{"e": {root.ID}}}},
		"tag+author+kinds":    {{Authors: []string{bob.PubKey}, Kinds: []int{7, 1059}, Tags: map[string][]string{"e": {root.ID}}}},
		"two tags":            {{Tags: map[string][]string{"e": {root.ID}, "t": {"go"}}}},
		"overlapping filters": {{Tags: map[string][]string{"t": {"go"}}}, {Authors: []string{bob.PubKey}}, {Kinds: []int{7}}},
	}
	check := func(stage string, evs []*nostr.Event) {
		t.Helper()
		for name, fs := range shapes {
			want := map[string]bool{}
			for _, f := range fs {
				for _, id := range Expected(evs, f) {
					want[id] = true
				}
			}
			if n := CountOf(t, b, c, fs...); n != int64(len(want)) {
				t.Errorf("%s: %s: count %d, want %d", stage, name, n, len(want))
			}
		}
	}
	check("nothing hidden", evs)
	// An expired event matching every shape but the kind-only ones.
	expired := alice.Event(t, 1, base+5, "expired", nostr.Tag{"e", root.ID}, nostr.Tag{"t", "go"},
		nostr.Tag{"expiration", fmt.Sprint(time.Now().Unix() - 10)})
	MustSave(t, b, c, expired)
	check("one expired event", evs)

	// Removed events never count, whichever way they went: one deleted
	// by its author (NIP-09 "e"), an addressable event's replaced version,
	// and then its head deleted by coordinate (NIP-09 "a"). Each matches
	// the tag shapes.
	deleted := evs[2] // alice's, kind 1, tagged e root and t go
	byID := alice.Event(t, nostr.KindDeletion, base+20, "", nostr.Tag{"e", deleted.ID})
	v1 := bob.Event(t, 30023, base+30, "v1", nostr.Tag{"d", "post"}, nostr.Tag{"e", root.ID}, nostr.Tag{"t", "go"})
	v2 := bob.Event(t, 30023, base+31, "v2", nostr.Tag{"d", "post"}, nostr.Tag{"e", root.ID}, nostr.Tag{"t", "go"})
	for _, ev := range []*nostr.Event{byID, v1, v2} { // in this order
		MustSave(t, b, c, ev)
	}
	live := append(slices.DeleteFunc(slices.Clone(evs), func(ev *nostr.Event) bool { return ev == deleted }), byID, v2)
	check("one deleted, one replaced", live)
	byCoord := bob.Event(t, nostr.KindDeletion, base+40, "", nostr.Tag{"a", "30023:" + bob.PubKey + ":post"})
	MustSave(t, b, c, byCoord)
	live = append(slices.DeleteFunc(live, func(ev *nostr.Event) bool { return ev == v2 }), byCoord)
	check("head deleted by coordinate", live)
}

func ptr[T any](v T) *T { return &v }

// countEacher is the batched count both backends offer (buzz.CountBatcher).
type countEacher interface {
	CountEach(ctx context.Context, c tenant.CommunityID, sets [][]nostr.Filter, scope channel.Scope) ([]int64, error)
}

// testCountEach checks that CountEach answers, set by set, what Count does:
// sets that match nothing, a set SQL cannot express whole (a tag name of
// two letters), several filters in a set, an unknown community.
func testCountEach(t *testing.T, b store.Backend) {
	cb, ok := b.(countEacher)
	if !ok {
		t.Fatalf("%T has no CountEach", b)
	}
	c := Community(t, b, "a.example")
	alice, bob := NewAuthor(t), NewAuthor(t)
	var evs []*nostr.Event
	for i := 0; i < 9; i++ {
		au := alice
		if i%3 == 0 {
			au = bob
		}
		evs = append(evs, au.Event(t, []int{1, 7, 1059}[i%3], base+int64(i), fmt.Sprint(i),
			nostr.Tag{"t", fmt.Sprint(i % 2)}, nostr.Tag{"tt", "long"}))
	}
	SaveAll(t, b, c, evs)
	sets := [][]nostr.Filter{
		{{Authors: []string{alice.PubKey}}},
		{{Kinds: []int{1059}}},
		{{Kinds: []int{}}},
		{{Tags: map[string][]string{"t": {"1"}}}, {Authors: []string{bob.PubKey}}},
		{},
		{{Kinds: []int{7}, Tags: map[string][]string{"t": {"0"}}}},
	}
	check := func(sets [][]nostr.Filter) {
		t.Helper()
		got, err := cb.CountEach(ctxb(), c, sets, channel.AllChannels())
		if err != nil || len(got) != len(sets) {
			t.Fatalf("CountEach = %v, %v; want %d counts", got, err, len(sets))
		}
		for i, fs := range sets {
			if want := CountOf(t, b, c, fs...); got[i] != want {
				t.Errorf("set %d: CountEach %d, Count %d", i, got[i], want)
			}
		}
	}
	check(sets)
	check(append(sets, []nostr.Filter{{Tags: map[string][]string{"tt": {"long"}}}}))
	// Sets followed by their gift-wrap part, as channel.CountGiftWrapped
	// asks for them (a store may count both with one statement), and
	// pairs that only look like it.
	t01 := map[string][]string{"t": {"0", "1"}}
	SaveAll(t, b, c, []*nostr.Event{ // more wraps than reactions
		alice.Event(t, 1059, base+20, "w1", nostr.Tag{"t", "1"}),
		alice.Event(t, 1059, base+21, "w2", nostr.Tag{"t", "0"}, nostr.Tag{"tt", "long"}),
	})
	check([][]nostr.Filter{
		{{Authors: []string{alice.PubKey}}},
		{{Authors: []string{alice.PubKey}, Kinds: []int{1059}}},
		{{Tags: t01}, {Kinds: []int{7}, Authors: []string{bob.PubKey}}, {Kinds: []int{1, 1059}, Since: ptr(base + 3)}},
		{{Tags: t01, Kinds: []int{1059}}, {Kinds: []int{1059}, Since: ptr(base + 3)}},
		{{Authors: []string{bob.PubKey}}},
		{{Authors: []string{alice.PubKey}, Kinds: []int{1059}}},
		{{Kinds: []int{}}},
		{{Kinds: []int{1059}}},
		{{Tags: map[string][]string{"tt": {"long"}}}},
		{{Tags: map[string][]string{"tt": {"long"}}, Kinds: []int{1059}}, {Kinds: []int{1059}}},
		{{Search: "w1"}},
		{{Search: "w1", Kinds: []int{1059}}},
	})
	// And by the reader's own private events among them, as the third set
	// (a store may count all three with one statement): narrowings of the
	// first set, by author, tag or tag rows, and third sets that only look
	// like it.
	SaveAll(t, b, c, []*nostr.Event{
		alice.Event(t, 1059, base+30, "w3", nostr.Tag{"p", bob.PubKey}, nostr.Tag{"t", "1"}),
		alice.Event(t, 1059, base+31, "w4", nostr.Tag{"p", alice.PubKey}, nostr.Tag{"t", "1"}),
		bob.Event(t, 7, base+32, "r", nostr.Tag{"p", bob.PubKey}, nostr.Tag{"t", "1"}, nostr.Tag{"tt", "long"}),
	})
	toBob := map[string][]string{"p": {bob.PubKey}}
	t1 := map[string][]string{"t": {"1"}}
	t1ToBob := map[string][]string{"t": {"1"}, "p": {bob.PubKey}}
	var triples [][]nostr.Filter
	triple := func(set, mine []nostr.Filter) {
		triples = append(triples, set, channel.GiftWrapPart(set), mine)
	}
	triple([]nostr.Filter{{Authors: []string{alice.PubKey}}},
		[]nostr.Filter{{Authors: []string{alice.PubKey}, Kinds: []int{1059}, Tags: toBob}})
	triple([]nostr.Filter{{Tags: t1}},
		[]nostr.Filter{{Tags: t1ToBob, Kinds: []int{1059}}, {Tags: t1, Kinds: []int{7}, Authors: []string{bob.PubKey}}})
	triple([]nostr.Filter{{Tags: t01}, {Authors: []string{bob.PubKey}}},
		[]nostr.Filter{{Tags: t1ToBob, Kinds: []int{1059, 7}}, {Authors: []string{bob.PubKey}, Kinds: []int{7}, Since: ptr(base + 30)}})
	triple([]nostr.Filter{{Authors: []string{alice.PubKey, bob.PubKey}, Tags: map[string][]string{"tt": {"long"}}}},
		[]nostr.Filter{{Authors: []string{bob.PubKey}, Tags: map[string][]string{"tt": {"long"}, "p": {bob.PubKey}}}})
	triple([]nostr.Filter{{Kinds: []int{1059}}}, []nostr.Filter{{Kinds: []int{1059}, Tags: t1}, {Kinds: []int{}}})
	triple([]nostr.Filter{{Kinds: []int{1059}}}, []nostr.Filter{{Kinds: []int{}}})
	// Third sets that do not narrow the first: counted on their own.
	triple([]nostr.Filter{{Authors: []string{alice.PubKey}}}, []nostr.Filter{{Authors: []string{bob.PubKey}, Kinds: []int{1059}}})
	triple([]nostr.Filter{{Tags: t1}}, []nostr.Filter{{Kinds: []int{1059}, Tags: toBob}})
	triple([]nostr.Filter{{Kinds: []int{1059}, Since: ptr(base + 30)}}, []nostr.Filter{{Kinds: []int{1059}}})
	check(triples)
	got, err := cb.CountEach(ctxb(), Community(t, b, "empty.example"), sets, channel.AllChannels())
	if err != nil || len(got) != len(sets) || slices.Max(got) != 0 {
		t.Fatalf("CountEach in an empty community = %v, %v", got, err)
	}
}

func testConcurrentSaves(t *testing.T, b store.Backend) {
	a := Community(t, b, "a.example")
	bb := Community(t, b, "b.example")
	authors := NewAuthors(t, 4)
	var drafts []Draft
	for i := 0; i < 100; i++ {
		drafts = append(drafts, Draft{authors[i%4], nostr.Event{Kind: 1, CreatedAt: base + int64(i), Content: fmt.Sprint(i), Tags: nostr.Tags{{"t", "c"}}}})
	}
	evs := SignAll(t, drafts)
	var wg sync.WaitGroup
	var mu sync.Mutex
	dups := 0
	const workers = 8
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			// Every worker saves every event, in both communities: each
			// (community, event) is accepted exactly once.
			for j := range evs {
				i := (j + w*13) % len(evs)
				for _, c := range []tenant.CommunityID{a, bb} {
					err := b.Save(ctxb(), c, evs[i])
					switch {
					case errors.Is(err, store.ErrDuplicate):
						mu.Lock()
						dups++
						mu.Unlock()
					case err != nil:
						t.Errorf("save: %v", err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if want := 2 * len(evs) * (workers - 1); dups != want {
		t.Fatalf("%d duplicates, want %d", dups, want)
	}
	for _, c := range []tenant.CommunityID{a, bb} {
		if n := CountOf(t, b, c, nostr.Filter{Tags: map[string][]string{"t": {"c"}}}); n != int64(len(evs)) {
			t.Fatalf("count = %d, want %d", n, len(evs))
		}
	}
}

func testContextCancellation(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice := NewAuthor(t)
	ctx, cancel := context.WithCancel(ctxb())
	cancel()
	ev := alice.Event(t, 1, base, "never saved")
	if err := b.Save(ctx, c, ev); !errors.Is(err, context.Canceled) {
		t.Fatalf("Save with cancelled context = %v, want context.Canceled", err)
	}
	wantIDs(t, "after cancelled save", QueryIDs(t, b, c, byID(ev.ID)))
	MustSave(t, b, c, ev)
	var gotErr error
	n := 0
	for _, err := range b.Query(ctx, c, nostr.Filter{}) {
		n++
		if err != nil {
			gotErr = err
		}
	}
	if !errors.Is(gotErr, context.Canceled) || n != 1 {
		t.Fatalf("Query with cancelled context yielded %d items, error %v; want one context.Canceled", n, gotErr)
	}
	if _, err := b.Count(ctx, c, []nostr.Filter{{}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Count with cancelled context = %v", err)
	}
	if _, err := b.DeleteExpired(ctx, time.Now()); !errors.Is(err, context.Canceled) {
		t.Fatalf("DeleteExpired with cancelled context = %v", err)
	}
	if _, _, err := b.EnsureCommunity(ctx, "new.example"); !errors.Is(err, context.Canceled) {
		t.Fatalf("EnsureCommunity with cancelled context = %v", err)
	}
	if _, err := b.LookupHost(ctxb(), "new.example"); !errors.Is(err, tenant.ErrUnmappedHost) {
		t.Fatalf("host from a cancelled EnsureCommunity is mapped: %v", err)
	}

	// Cancelling in the middle of iteration stops it with the context error.
	for i := 0; i < 20; i++ {
		MustSave(t, b, c, alice.Event(t, 1, base+int64(i)+1, fmt.Sprint(i)))
	}
	ctx2, cancel2 := context.WithCancel(ctxb())
	defer cancel2()
	seen := 0
	var midErr error
	for _, err := range b.Query(ctx2, c, nostr.Filter{}) {
		if err != nil {
			midErr = err
			break
		}
		seen++
		if seen == 1 {
			cancel2()
		}
	}
	switch {
	case midErr == nil && seen != 21:
		// Stopping short is fine, silently truncating results is not.
		t.Fatalf("iteration after cancel ended after %d of 21 records without an error", seen)
	case midErr != nil && !errors.Is(midErr, context.Canceled):
		t.Fatalf("iteration after cancel ended with %v", midErr)
	}
}

func testEarlyStop(t *testing.T, b store.Backend) {
	c := Community(t, b, "a.example")
	alice := NewAuthor(t)
	for i := 0; i < 5; i++ {
		MustSave(t, b, c, alice.Event(t, 1, base+int64(i), fmt.Sprint(i)))
	}
	// Abandoning iterations must release their resources: many more early
	// stops than any sane connection pool, then queries and writes still
	// work promptly.
	for i := 0; i < 200; i++ {
		for _, err := range b.Query(ctxb(), c, nostr.Filter{}) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	ctx, cancel := context.WithTimeout(ctxb(), 30*time.Second)
	defer cancel()
	if n, err := b.Count(ctx, c, []nostr.Filter{{}}); err != nil || n != 5 {
		t.Fatalf("count after early stops = %d, %v", n, err)
	}
	if err := b.Save(ctx, c, alice.Event(t, 1, base+10, "after")); err != nil {
		t.Fatalf("save after early stops: %v", err)
	}
}

func testCommunities(t *testing.T, b store.Backend) {
	if _, err := b.LookupHost(ctxb(), "unknown.example"); !errors.Is(err, tenant.ErrUnmappedHost) {
		t.Fatalf("LookupHost(unknown) = %v, want ErrUnmappedHost", err)
	}
	id, created, err := b.EnsureCommunity(ctxb(), "a.example")
	if err != nil || !created || id.IsZero() {
		t.Fatalf("EnsureCommunity(new) = %v, %v, %v", id, created, err)
	}
	id2, created, err := b.EnsureCommunity(ctxb(), "a.example")
	if err != nil || created || id2 != id {
		t.Fatalf("EnsureCommunity(again) = %v, %v, %v; want %v, false", id2, created, err, id)
	}
	got, err := b.LookupHost(ctxb(), "a.example")
	if err != nil || got != id {
		t.Fatalf("LookupHost = %v, %v; want %v", got, err, id)
	}
	if _, err := b.LookupHost(ctxb(), "A.example"); !errors.Is(err, tenant.ErrUnmappedHost) {
		t.Fatalf("LookupHost is not exact on normalized hosts: %v", err)
	}
	for _, h := range []string{"localhost:3000", "[2001:db8::1]:8080", "xn--bcher-kva.example"} {
		hid := Community(t, b, h)
		if got, err := b.LookupHost(ctxb(), h); err != nil || got != hid || hid == id {
			t.Fatalf("host %q: LookupHost = %v, %v", h, got, err)
		}
	}

	// Concurrent callers for one new host all get the same id, and exactly
	// one of them created it.
	const n = 16
	ids := make([]tenant.CommunityID, n)
	createdBy := make([]bool, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var err error
			ids[i], createdBy[i], err = b.EnsureCommunity(ctxb(), "race.example")
			if err != nil {
				t.Errorf("EnsureCommunity: %v", err)
			}
		}(i)
	}
	wg.Wait()
	creators := 0
	for i := range ids {
		if ids[i] != ids[0] || ids[i].IsZero() {
			t.Fatalf("concurrent EnsureCommunity returned different ids")
		}
		if createdBy[i] {
			creators++
		}
	}
	if creators != 1 {
		t.Fatalf("%d callers report creating the community, want 1", creators)
	}
}
