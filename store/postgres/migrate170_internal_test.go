package postgres

import (
	"context"
	"testing"
)

// TestMigration170Backfill upgrades a database holding tag rows written
// before version 170: a live event's rows get its kind, expiry and
// channel, a deleted event's rows go, and a later deletion removes the
// rows through the trigger.
func TestMigration170Backfill(t *testing.T) {
	ctx := context.Background()
	url, _, owner := databaseAt(t, 160)
	_, err := owner.Exec(ctx, `
INSERT INTO communities (id, host) VALUES ('00000000-0000-0000-0000-00000000000a', 'a.example');
INSERT INTO channels (community_id, id, name, created_by) VALUES
    ('00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-0000000000c1', 'general', sha256('au'::bytea));
INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw, channel_id, expires_at, deleted_at)
SELECT '00000000-0000-0000-0000-00000000000a', 1700000000 + g, sha256(('ev' || g)::bytea), sha256('au'::bytea),
       CASE WHEN g = 1 THEN 9 ELSE 1 END, '[["t","go"],["e","`+hexOf("root")+`"]]', 'x',
       decode(repeat('00', 64), 'hex'), '{}'::bytea,
       CASE WHEN g = 1 THEN '00000000-0000-0000-0000-0000000000c1'::uuid END,
       CASE WHEN g = 2 THEN 1900000000 END,
       CASE WHEN g = 3 THEN now() END
FROM generate_series(1, 4) AS g;
INSERT INTO event_tags (community_id, name, value, created_at, event_id)
SELECT e.community_id, t.name, t.value, e.created_at, e.id
FROM events e, (VALUES ('t', convert_to('go', 'UTF8')), ('e', '\xfe'::bytea || decode('`+hexOf("root")+`', 'hex'))) AS t(name, value);`)
	if err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	type row struct {
		g          int
		kind       int32
		expires    *int64
		hasChannel bool
	}
	rows := func() map[row]int {
		rs, err := owner.Query(ctx, `SELECT e.created_at - 1700000000, t.kind, t.expires_at, t.channel_id IS NOT NULL
FROM event_tags t JOIN events e ON e.community_id = t.community_id AND e.created_at = t.created_at AND e.id = t.event_id`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[row]int{}
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.g, &r.kind, &r.expires, &r.hasChannel); err != nil {
				t.Fatal(err)
			}
			r.expires = nil
			got[r]++
		}
		return got
	}
	got := rows()
	want := map[row]int{{g: 1, kind: 9, hasChannel: true}: 2, {g: 2, kind: 1}: 2, {g: 4, kind: 1}: 2}
	if len(got) != len(want) {
		t.Fatalf("after the upgrade: tag rows %v, want %v (none of the deleted event 3)", got, want)
	}
	for r, n := range want {
		if got[r] != n {
			t.Errorf("after the upgrade: event %d: %d tag rows with kind %d, channel %v; want %d (all: %v)", r.g, got[r], r.kind, r.hasChannel, n, got)
		}
	}
	var expiry int64
	if err := owner.QueryRow(ctx, `SELECT t.expires_at FROM event_tags t WHERE t.created_at = 1700000002 LIMIT 1`).Scan(&expiry); err != nil || expiry != 1900000000 {
		t.Errorf("event 2's tag rows carry expiry %d (%v), want 1900000000", expiry, err)
	}
	if _, err := owner.Exec(ctx, `UPDATE events SET deleted_at = now() WHERE created_at = 1700000004`); err != nil {
		t.Fatal(err)
	}
	if got := rows(); got[row{g: 4, kind: 1}] != 0 || len(got) != 2 {
		t.Errorf("after deleting event 4: tag rows %v, want only events 1 and 2", got)
	}
}
