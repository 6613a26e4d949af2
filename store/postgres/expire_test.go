package postgres_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestDeleteExpiredRemovesTagRows checks that DeleteExpired's SQL encoding
// of tag values matches the one Save uses, for every kind of value (hex,
// short text, long text), so no event_tags rows are orphaned.
func TestDeleteExpiredRemovesTagRows(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := storetest.Community(t, s, "exp.example")
	alice := storetest.NewAuthor(t)
	now := time.Now().Unix()
	exp := strconv.FormatInt(now-10, 10)
	gone := alice.Event(t, 1, now-100, "expired",
		nostr.Tag{"expiration", exp},
		nostr.Tag{"e", strings.Repeat("ab", 32)},
		nostr.Tag{"p", strings.Repeat("AB", 32)}, // not lowercase: stored as text
		nostr.Tag{"t", "short"},
		nostr.Tag{"t", strings.Repeat("long ", 80)},
		nostr.Tag{"alt", "not indexed"})
	kept := alice.Event(t, 1, now-100, "kept", nostr.Tag{"t", "short"})
	storetest.MustSave(t, s, c, gone)
	storetest.MustSave(t, s, c, kept)

	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	tagRows := func() int {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM event_tags`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := tagRows(); n != 5 {
		t.Fatalf("event_tags holds %d rows before expiry, want 5", n)
	}
	n, err := s.DeleteExpired(ctx, time.Now())
	if err != nil || n != 1 {
		t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
	}
	if n := tagRows(); n != 1 {
		t.Fatalf("event_tags holds %d rows after expiry, want only the kept event's 1", n)
	}
	// The filters still find what they should.
	got := storetest.QueryIDs(t, s, c, nostr.Filter{Tags: map[string][]string{"t": {"short"}}})
	if len(got) != 1 || got[0] != kept.ID {
		t.Fatalf("#t short = %v, want [%s]", got, kept.ID)
	}
}
