package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

// TestMigrateConcurrentAndIdempotent starts four migrations of an empty
// database at once (as pods starting together would), then a fifth: all
// succeed and the schema is applied exactly once.
func TestMigrateConcurrentAndIdempotent(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewEmptyDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = postgres.Migrate(ctx, url)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate %d: %v", i, err)
		}
	}
	if err := postgres.Migrate(ctx, url); err != nil {
		t.Fatalf("repeated Migrate: %v", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var applied, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if applied == 0 || applied != distinct {
		t.Fatalf("goose_db_version: %d applications of %d versions", applied, distinct)
	}
	// And the store opens on it.
	s, err := postgres.Open(ctx, url, postgres.WithAutoMigrate(true))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// TestOpenRejectsInvalidOptions checks option validation.
func TestOpenRejectsInvalidOptions(t *testing.T) {
	ctx := context.Background()
	const unreachable = "postgres://postgres@127.0.0.1:1/none?connect_timeout=2"
	for name, opt := range map[string]postgres.Option{
		"pool size":  postgres.WithMaxConns(1),
		"batch size": postgres.WithGroupCommit(0, 0),
		"linger":     postgres.WithGroupCommit(10, -1),
		"role":       postgres.WithRLSRole("x; DROP TABLE events"),
		"committers": postgres.WithCommitters(0),
		"logger":     postgres.WithLogger(nil),
	} {
		if _, err := postgres.Open(ctx, unreachable, opt); err == nil || strings.Contains(err.Error(), "connect") {
			t.Errorf("%s: Open = %v, want an option error before connecting", name, err)
		}
	}
	_, err := postgres.Open(ctx, unreachable, postgres.WithMaxConns(4), postgres.WithCommitters(4))
	if err == nil || strings.Contains(err.Error(), "connect") {
		t.Errorf("committers >= pool size: Open = %v", err)
	}
	// Valid options get as far as connecting.
	_, err = postgres.Open(ctx, unreachable, postgres.WithMaxConns(8), postgres.WithGroupCommit(64, time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("valid options: Open = %v, want a connection error", err)
	}
}
