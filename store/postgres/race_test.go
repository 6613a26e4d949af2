package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestReplacementRaceAcrossPools races many versions of one replaceable and
// one addressable coordinate from two independent stores (two pgxpools, as
// two relay processes would) and checks that exactly one live head remains
// per coordinate, and that it is the winning version.
func TestReplacementRaceAcrossPools(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	var stores [2]*postgres.Store
	for i := range stores {
		s, err := postgres.Open(ctx, url, postgres.WithMaxConns(6), postgres.WithCommitters(3))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	c := storetest.Community(t, stores[0], "race.example")
	alice := storetest.NewAuthor(t)
	base := time.Now().Unix() - 1000
	r := rand.New(rand.NewPCG(1, 2))
	for _, kind := range []int{10002, 30023} {
		var versions []*nostr.Event
		for i := range 120 {
			// Few distinct timestamps, so equal created_at ties are common.
			versions = append(versions, alice.Event(t, kind, base+int64(r.IntN(20)), fmt.Sprint("v", i), nostr.Tag{"d", "x"}))
		}
		want := versions[0]
		for _, v := range versions[1:] {
			if storetest.Wins(v, want) {
				want = v
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(versions))
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stores[w%2]
				for i := w; i < len(versions); i += 8 {
					err := s.Save(ctx, c, versions[i])
					if err != nil && !errors.Is(err, store.ErrSuperseded) {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("kind %d: %v", kind, err)
		}
		got := storetest.QueryIDs(t, stores[1], c, nostr.Filter{Authors: []string{alice.PubKey}, Kinds: []int{kind}})
		if len(got) != 1 || got[0] != want.ID {
			t.Fatalf("kind %d: live heads %v, want only %s", kind, got, want.ID)
		}
		// And in the table itself (not just through Query).
		admin, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		var live int
		err = admin.QueryRow(ctx, `SELECT count(*) FROM events WHERE kind = $1 AND deleted_at IS NULL`, kind).Scan(&live)
		admin.Close(ctx)
		if err != nil || live != 1 {
			t.Fatalf("kind %d: %d live rows in events (%v), want 1", kind, live, err)
		}
	}
}
