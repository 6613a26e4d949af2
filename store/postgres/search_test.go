package postgres_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
)

func TestSearch(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) storetest.ChannelBackend { return openStore(t) })
}

// TestSearchLeakproofWarning: a database where tsvector @@ tsquery is not
// LEAKPROOF (restored from a dump, or migrated by a non-superuser) makes
// Open warn that searches cannot use events_search_idx under RLS.
func TestSearchLeakproofWarning(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	open := func() string {
		t.Helper()
		var buf bytes.Buffer
		s, err := postgres.Open(ctx, url, postgres.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		return buf.String()
	}
	if log := open(); strings.Contains(log, "LEAKPROOF") {
		t.Fatalf("warning on a migrated database:\n%s", log)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ALTER FUNCTION ts_match_vq(tsvector, tsquery) NOT LEAKPROOF`); err != nil {
		t.Fatal(err)
	}
	if log := open(); !strings.Contains(log, "ts_match_vq is not LEAKPROOF") {
		t.Fatalf("no warning:\n%s", log)
	}
}
