package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// TestMigration190SearchLexemes upgrades a database whose search rows hold
// the shared lexemes of before version 190: every row's lexemes become its
// community's, searches find what they found (phrases and case folding
// included) and nothing of the other community.
func TestMigration190SearchLexemes(t *testing.T) {
	ctx := context.Background()
	url, _, owner := databaseAt(t, 170)
	const ida, idb = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
	_, err := owner.Exec(ctx, `
INSERT INTO communities (id, host) VALUES ('`+ida+`', 'a.example'), ('`+idb+`', 'b.example');
INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw)
SELECT c, 1700000000 + g, sha256(('ev' || g)::bytea), sha256('au'::bytea), 1, '[]', content,
       decode(repeat('00', 64), 'hex'), '{}'::bytea
FROM (VALUES (1, '`+ida+`'::uuid, 'Secret plans, for the week'), (2, '`+ida+`'::uuid, 'Café au lait'),
             (3, '`+idb+`'::uuid, 'secret other')) AS v(g, c, content);`)
	if err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	var shared int
	err = owner.QueryRow(ctx, `SELECT count(*) FROM event_search s, unnest(s.tsv) AS u
WHERE NOT starts_with(u.lexeme, buzz_search_prefix(s.community_id))`).Scan(&shared)
	if err != nil || shared != 0 {
		t.Fatalf("%d lexemes not of their community after the migration (%v)", shared, err)
	}

	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := tenant.FromUUID([16]byte{15: 0x0a}), tenant.FromUUID([16]byte{15: 0x0b})
	search := func(c tenant.CommunityID, q string) []int64 {
		t.Helper()
		var got []int64
		for r, err := range s.Query(ctx, c, nostr.Filter{Search: q}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.CreatedAt-1700000000)
		}
		slices.Sort(got)
		return got
	}
	for _, tc := range []struct {
		c    tenant.CommunityID
		q    string
		want []int64
	}{
		{a, "secret", []int64{1}}, {a, `"SECRET PLANS"`, []int64{1}}, {a, "café", []int64{2}}, {a, "other", nil},
		{b, "secret", []int64{3}}, {b, "plans", nil}, {b, "secret other", []int64{3}},
	} {
		if got := search(tc.c, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("search %q in %v: %v, want %v", tc.q, tc.c, got, tc.want)
		}
	}
}
