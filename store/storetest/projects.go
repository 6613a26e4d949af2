package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/store"
)

// ProjectBackend is a backend with revisioned project state and
// repository name reservations.
type ProjectBackend interface {
	store.Backend
	store.ProjectStore
	store.RepoNameStore
}

// RunProjects is the conformance suite of store.ProjectStore and
// store.RepoNameStore. open returns two handles on one new database: on a
// shared backend (PostgreSQL) two processes, on the embedded store the
// same store twice; the concurrent cases race through both.
func RunProjects(t *testing.T, open func(t *testing.T) (ProjectBackend, ProjectBackend)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, a, b ProjectBackend)
	}{
		{"CompareAndSwap", testProjectCAS},
		{"IdentityAdvances", testProjectIdentity},
		{"PerCommunity", testProjectPerCommunity},
		{"ConcurrentChanges", testProjectConcurrent},
		{"RepoNames", testRepoNames},
		{"ConcurrentRepoNames", testRepoNamesConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := open(t)
			tc.fn(t, a, b)
		})
	}
}

func projID(i int) string { return fmt.Sprintf("%064x", i) }

func testProjectCAS(t *testing.T, a, _ ProjectBackend) {
	c, _, err := a.EnsureCommunity(ctxb(), "projects.example")
	mustNil(t, err)
	owner := NewAuthor(t).PubKey
	base := store.ProjectChange{Owner: owner, D: "proj:x", Identity: projID(1), Home: "home", Related: []string{"r1", "home"}}
	apply := func(id, expected int, add, remove []string) store.ProjectChangeResult {
		t.Helper()
		ch := base
		ch.EventID, ch.Expected, ch.Add, ch.Remove = projID(id), int64(expected), add, remove
		r, err := a.ApplyProjectChange(ctxb(), c, ch)
		mustNil(t, err)
		return r
	}
	// First change: the project is materialized at revision 1.
	if r := apply(100, 1, []string{"r2"}, nil); r.Status != store.ProjectChangeApplied || r.Revision != 2 || !slices.Equal(r.Related, []string{"r1", "r2"}) {
		t.Fatalf("first change: %+v", r)
	}
	if r := apply(100, 1, []string{"r2"}, nil); r.Status != store.ProjectChangeDuplicate || r.Revision != 2 {
		t.Fatalf("the same change again: %+v", r)
	}
	if r := apply(101, 1, []string{"r3"}, nil); r.Status != store.ProjectChangeConflict || r.Revision != 2 {
		t.Fatalf("stale base: %+v", r)
	}
	if r := apply(102, 3, []string{"r3"}, nil); r.Status != store.ProjectChangeConflict || r.Revision != 2 {
		t.Fatalf("future base: %+v", r)
	}
	for _, tc := range []struct {
		add, remove []string
		reason      string
	}{
		{[]string{"home"}, nil, store.ReasonProjectAddExisting},
		{[]string{"r1"}, nil, store.ReasonProjectAddExisting},
		{nil, []string{"nope"}, store.ReasonProjectRemoveAbsent},
	} {
		if r := apply(103, 2, tc.add, tc.remove); r.Status != store.ProjectChangeInvalid || r.Reason != tc.reason {
			t.Fatalf("invalid %v/%v: %+v", tc.add, tc.remove, r)
		}
	}
	many := make([]string, store.MaxRelatedChannels-1)
	for i := range many {
		many[i] = fmt.Sprintf("m%02d", i)
	}
	if r := apply(104, 2, many, nil); r.Status != store.ProjectChangeInvalid || r.Reason != store.ReasonProjectTooMany {
		t.Fatalf("over 64: %+v", r)
	}
	if r := apply(105, 2, []string{"r3"}, []string{"r1"}); r.Status != store.ProjectChangeApplied || r.Revision != 3 || !slices.Equal(r.Related, []string{"r2", "r3"}) {
		t.Fatalf("change on the current base: %+v", r)
	}
	// The refused ones left no receipt: sent again on the right base, they apply.
	if r := apply(101, 3, []string{"r1"}, nil); r.Status != store.ProjectChangeApplied || r.Revision != 4 {
		t.Fatalf("a refused change, again on the current base: %+v", r)
	}
	// Another d or owner is another project.
	other := base
	other.D, other.EventID, other.Expected, other.Add = "proj:y", projID(106), 1, []string{"z"}
	if r, err := a.ApplyProjectChange(ctxb(), c, other); err != nil || r.Status != store.ProjectChangeApplied || r.Revision != 2 {
		t.Fatalf("another project: %+v %v", r, err)
	}
}

func testProjectIdentity(t *testing.T, a, _ ProjectBackend) {
	c, _, err := a.EnsureCommunity(ctxb(), "identity.example")
	mustNil(t, err)
	ch := store.ProjectChange{EventID: projID(1), Owner: NewAuthor(t).PubKey, D: "p", Identity: projID(50), Expected: 1, Add: []string{"a"}}
	r, err := a.ApplyProjectChange(ctxb(), c, ch)
	if err != nil || r.Status != store.ProjectChangeApplied || r.Revision != 2 {
		t.Fatalf("first: %+v %v", r, err)
	}
	// The owner replaced the project (a new 30621): that is revision 3, so
	// a change made against 2 is stale; its related channels are united.
	ch.EventID, ch.Identity, ch.Related, ch.Expected, ch.Add = projID(2), projID(51), []string{"b"}, 2, []string{"c"}
	if r, err := a.ApplyProjectChange(ctxb(), c, ch); err != nil || r.Status != store.ProjectChangeConflict || r.Revision != 3 {
		t.Fatalf("change against the replaced identity: %+v %v", r, err)
	}
	ch.Expected = 3
	if r, err := a.ApplyProjectChange(ctxb(), c, ch); err != nil || r.Status != store.ProjectChangeApplied || r.Revision != 4 || !slices.Equal(r.Related, []string{"a", "b", "c"}) {
		t.Fatalf("change on the new identity: %+v %v", r, err)
	}
}

func testProjectPerCommunity(t *testing.T, a, _ ProjectBackend) {
	c1, _, err := a.EnsureCommunity(ctxb(), "p-one.example")
	mustNil(t, err)
	c2, _, err := a.EnsureCommunity(ctxb(), "p-two.example")
	mustNil(t, err)
	ch := store.ProjectChange{EventID: projID(1), Owner: NewAuthor(t).PubKey, D: "p", Identity: projID(9), Expected: 1, Add: []string{"a"}}
	if r, err := a.ApplyProjectChange(ctxb(), c1, ch); err != nil || r.Status != store.ProjectChangeApplied {
		t.Fatalf("in one: %+v %v", r, err)
	}
	// The same event in two: no receipt there, its own revision 1.
	if r, err := a.ApplyProjectChange(ctxb(), c2, ch); err != nil || r.Status != store.ProjectChangeApplied || r.Revision != 2 {
		t.Fatalf("in two: %+v %v", r, err)
	}
	owner := NewAuthor(t).PubKey
	if r, err := a.ReserveRepoName(ctxb(), c1, "repo", owner, 1); err != nil || r != store.RepoReserved {
		t.Fatalf("reserve in one: %v %v", r, err)
	}
	if r, err := a.ReserveRepoName(ctxb(), c2, "repo", NewAuthor(t).PubKey, 1); err != nil || r != store.RepoReserved {
		t.Fatalf("same name in two: %v %v", r, err)
	}
	if r, err := a.ReserveRepoName(ctxb(), c2, "other", owner, 1); err != nil || r != store.RepoReserved {
		t.Fatalf("one's quota counted in two: %v %v", r, err)
	}
	mustNil(t, a.ReleaseRepoName(ctxb(), c2, "repo", owner))
	if r, _ := a.ReserveRepoName(ctxb(), c1, "repo", NewAuthor(t).PubKey, 1); r != store.RepoTakenByOther {
		t.Fatalf("a release in two freed one's name: %v", r)
	}
}

func testProjectConcurrent(t *testing.T, a, b ProjectBackend) {
	c, _, err := a.EnsureCommunity(ctxb(), "p-race.example")
	mustNil(t, err)
	owner := NewAuthor(t).PubKey
	const n = 16
	for round := range 3 {
		// n changes against the same revision, through both handles:
		// exactly one applies, the others see it.
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			applied []int
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := a
				if i%2 == 1 {
					h = b
				}
				ch := store.ProjectChange{EventID: projID(1000*round + i), Owner: owner, D: "race", Identity: projID(7),
					Expected: int64(round + 1), Add: []string{fmt.Sprintf("c%d-%d", round, i)}}
				r, err := h.ApplyProjectChange(ctxb(), c, ch)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Errorf("change %d: %v", i, err)
				case r.Status == store.ProjectChangeApplied:
					applied = append(applied, i)
				case r.Status != store.ProjectChangeConflict || r.Revision != int64(round+2):
					t.Errorf("change %d: %+v", i, r)
				}
			}()
		}
		wg.Wait()
		if len(applied) != 1 {
			t.Fatalf("round %d: %d changes applied on one base, want exactly 1", round, len(applied))
		}
	}
}

func testRepoNames(t *testing.T, a, _ ProjectBackend) {
	c, _, err := a.EnsureCommunity(ctxb(), "repos.example")
	mustNil(t, err)
	alice, bob := NewAuthor(t).PubKey, NewAuthor(t).PubKey
	want := func(name, owner string, limit int, w store.RepoReservation) {
		t.Helper()
		if r, err := a.ReserveRepoName(ctxb(), c, name, owner, limit); err != nil || r != w {
			t.Fatalf("reserve %s: %v %v, want %v", name, r, err, w)
		}
	}
	want("one", alice, 2, store.RepoReserved)
	want("one", alice, 2, store.RepoAlreadyOwned)
	want("one", bob, 2, store.RepoTakenByOther)
	want("two", alice, 2, store.RepoReserved)
	want("three", alice, 2, store.RepoQuotaExceeded)
	want("one", alice, 2, store.RepoAlreadyOwned)        // a re-announcement at the quota
	want("three", bob, 2, store.RepoReserved)            // the refusal reserved nothing
	mustNil(t, a.ReleaseRepoName(ctxb(), c, "one", bob)) // not bob's: nothing
	want("one", bob, 2, store.RepoTakenByOther)
	mustNil(t, a.ReleaseRepoName(ctxb(), c, "one", alice))
	want("four", alice, 2, store.RepoReserved)
	want("one", bob, 2, store.RepoReserved)
}

func testRepoNamesConcurrent(t *testing.T, a, b ProjectBackend) {
	c, _, err := a.EnsureCommunity(ctxb(), "repos-race.example")
	mustNil(t, err)
	owner := NewAuthor(t).PubKey
	const n, limit = 16, 5
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		reserved int
		name     = map[string]int{}
	)
	// One owner, n new names at once: exactly limit are reserved. And n
	// owners racing for one name: exactly one holds it.
	for i := range n {
		wg.Add(2)
		h := a
		if i%2 == 1 {
			h = b
		}
		go func() {
			defer wg.Done()
			r, err := h.ReserveRepoName(ctxb(), c, fmt.Sprintf("repo-%d", i), owner, limit)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("reserve %d: %v", i, err)
			}
			if r == store.RepoReserved {
				reserved++
			}
		}()
		go func() {
			defer wg.Done()
			r, err := h.ReserveRepoName(ctxb(), c, "shared", strings.Repeat(fmt.Sprintf("%x", i%16), 64), limit)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("reserve shared %d: %v", i, err)
			}
			name[fmt.Sprint(r)]++
		}()
	}
	wg.Wait()
	if reserved != limit {
		t.Fatalf("%d names reserved under a quota of %d", reserved, limit)
	}
	if name[fmt.Sprint(store.RepoReserved)] != 1 || name[fmt.Sprint(store.RepoTakenByOther)] != n-1 {
		t.Fatalf("one name raced by %d owners: %v", n, name)
	}
}
