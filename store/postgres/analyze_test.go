package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

// TestAnalyzesAfterGrowth checks that the store keeps planner statistics
// itself: after 1,000 events stored into a never-analysed database, the
// event partitions have row estimates without anyone running ANALYZE.
func TestAnalyzesAfterGrowth(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, _, err := s.EnsureCommunity(ctx, "analyze.example")
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := nostr.GenerateSecretKey()
	now := time.Now().Unix()
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for i := range 1000 {
		ev := signed(t, sk, 1, now-int64(i), fmt.Sprint("event ", i), nostr.Tag{"t", fmt.Sprint("topic", i%40)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Save(ctx, c, ev); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var est float64
		err := mon.QueryRow(ctx, `SELECT coalesce(sum(greatest(c.reltuples, 0)), 0) FROM pg_inherits i
			JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass`).Scan(&est)
		if err != nil {
			t.Fatal(err)
		}
		if est >= 1000 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("event partitions estimate %v rows after 1,000 saves: not analysed", est)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWarnsWithoutAutovacuum checks that Open warns exactly when the
// server runs without autovacuum.
func TestWarnsWithoutAutovacuum(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	s, err := postgres.Open(ctx, url, postgres.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	var on string
	if err := mon.QueryRow(ctx, `SHOW autovacuum`).Scan(&on); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	warned := strings.Contains(logs.String(), "autovacuum is off")
	mu.Unlock()
	if warned != (on == "off") {
		t.Fatalf("autovacuum %s, warned %v", on, warned)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
