package postgres_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

// TestFreshDatabasePlans loads 20,000 events into a fresh database (on a
// server whose autovacuum may be off: the store analyses itself) and
// checks that each heavy REQ and COUNT shape of issues 15 and 17 answers
// within a generous bound — they ran for 50 s to minutes on a
// never-analysed partition. The bound is far above the milliseconds they
// take with statistics, so a loaded machine does not fail it; a blind plan
// does.
func TestFreshDatabasePlans(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 20,000 events")
	}
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, _, err := s.EnsureCommunity(ctx, "plans.example")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(15, 17))
	hex64 := func() string {
		var b [32]byte
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return hex.EncodeToString(b[:])
	}
	pubs := make([]string, 200)
	for i := range pubs {
		pubs[i] = hex64()
	}
	topics := make([]string, 400)
	for i := range topics {
		topics[i] = fmt.Sprint("topic-", i)
	}
	now := time.Now().Unix()
	evs := make([]*nostr.Event, 20_000)
	var ids []string
	for i := range evs {
		ev := &nostr.Event{PubKey: pubs[rng.IntN(len(pubs))], CreatedAt: now - int64(rng.IntN(86400*20)), Kind: 1,
			Content: "x", Sig: strings.Repeat("0", 128),
			Tags: nostr.Tags{{"t", topics[rng.IntN(len(topics))]}, {"p", pubs[rng.IntN(len(pubs))]}}}
		ev.ID = ev.ComputeID()
		evs[i] = ev
		if i%20 == 0 {
			ids = append(ids, ev.ID)
		}
	}
	if _, err := postgres.BulkLoad(ctx, url, c, evs); err != nil {
		t.Fatal(err)
	}
	limit := func(f nostr.Filter) nostr.Filter { f.Limit, f.LimitSet = 500, true; return f }
	shapes := []struct {
		name string
		f    nostr.Filter
	}{
		{"#t × 40", nostr.Filter{Tags: map[string][]string{"t": topics[:40]}}},
		{"#p × 200", nostr.Filter{Tags: map[string][]string{"p": pubs}}},
		{"#t + #z", nostr.Filter{Tags: map[string][]string{"t": topics[:1], "z": {"y"}}}},
		{"ids × 1000", nostr.Filter{IDs: ids}},
		{"authors × 200 kinds", nostr.Filter{Authors: pubs, Kinds: []int{1, 6, 7}}},
	}
	const bound = 10 * time.Second
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			qctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			for _, err := range s.Query(qctx, c, limit(sh.f)) {
				if err != nil {
					t.Fatalf("REQ: %v (bound %v)", err, bound)
				}
			}
			if _, err := s.Count(qctx, c, []nostr.Filter{sh.f}); err != nil {
				t.Fatalf("COUNT: %v (bound %v)", err, bound)
			}
		})
	}
}
