package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestRLSForgottenCommunityPredicate proves row-level security is the
// backstop: as the relay's role, with community A set for the transaction,
// statements that forgot "WHERE community_id" see, change and create only
// A's rows; with no community set they see nothing.
func TestRLSForgottenCommunityPredicate(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := storetest.Community(t, s, "a.example")
	b := storetest.Community(t, s, "b.example")
	alice := storetest.NewAuthor(t)
	now := time.Now().Unix()
	shared := alice.Event(t, 1, now, "in both", nostr.Tag{"t", "x"})
	storetest.MustSave(t, s, a, shared)
	storetest.MustSave(t, s, b, shared)
	for i := range 3 {
		storetest.MustSave(t, s, b, alice.Event(t, 1, now+int64(i)+1, "only b", nostr.Tag{"t", "x"}))
	}
	storetest.MustSave(t, s, b, alice.Deletion(t, now+10, []string{shared.ID}, nil))

	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	count := func(q pgx.Tx, sql string) int {
		t.Helper()
		var n int
		if err := q.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}

	// Not vacuous: the owner (superuser, bypassing RLS) sees both communities.
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(tx, `SELECT count(*) FROM events`); n != 6 {
		t.Fatalf("owner sees %d events, want 6 (1 in a, 5 in b)", n)
	}
	_ = tx.Rollback(ctx)

	tx, err = admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL ROLE buzz_app`); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"events", "event_tags", "event_tombstones", "deletion_watermarks", "channels", "users", "audit_log"} {
		if n := count(tx, `SELECT count(*) FROM `+table); n != 0 {
			t.Errorf("no community set: %s shows %d rows, want 0", table, n)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('buzz.community_id', $1, true)`, a.String()); err != nil {
		t.Fatal(err)
	}
	if n := count(tx, `SELECT count(*) FROM events`); n != 1 {
		t.Errorf("community a set: events shows %d rows, want 1", n)
	}
	if n := count(tx, `SELECT count(*) FROM events WHERE kind = 5`); n != 0 {
		t.Errorf("community a set: b's deletion request is visible")
	}
	if n := count(tx, `SELECT count(*) FROM event_tags`); n != 1 {
		t.Errorf("community a set: event_tags shows %d rows, want 1", n)
	}
	if n := count(tx, `SELECT count(*) FROM event_tombstones`); n != 0 {
		t.Errorf("community a set: b's tombstone is visible")
	}
	var updated int64
	tag, err := tx.Exec(ctx, `UPDATE events SET deleted_at = now()`)
	if err != nil {
		t.Fatal(err)
	}
	if updated = tag.RowsAffected(); updated != 1 {
		t.Errorf("unscoped UPDATE touched %d rows, want only a's 1", updated)
	}
	if _, err := tx.Exec(ctx, `SAVEPOINT s`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO users (community_id, pubkey) VALUES ($1, $2)`, b.UUID(), make([]byte, 32)); err == nil {
		t.Errorf("inserting a row of community b while a is set succeeded")
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT s`); err != nil {
		t.Fatal(err)
	}
	// Partitions are not reachable around the parent's policies.
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM events_p_future`); err == nil {
		t.Errorf("buzz_app can read a partition directly")
	}
}
