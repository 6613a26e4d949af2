package postgres

import (
	"context"
	"strings"
	"testing"
)

// TestMigration300SearchTrigger saves the same contents before and after
// version 300 and finds the search rows identical: the trigger that keeps
// its plans yields the tsvector the one calling SQL functions did, for
// quotes, backslashes, punctuation, non-ASCII words, a word past the
// lexeme limit, content without a word, and a community with no row.
// Searches after the upgrade are covered by the store's own tests.
func TestMigration300SearchTrigger(t *testing.T) {
	ctx := context.Background()
	url, p, owner := databaseAt(t, 290)
	const ida, idb = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
	if _, err := owner.Exec(ctx, `INSERT INTO communities (id, host) VALUES ('`+ida+`', 'a.example')`); err != nil {
		t.Fatal(err)
	}
	contents := []string{
		"Secret plans, for the week",
		`it's a "quoted" back\slash and \'both\'`,
		"Café au lait — naïve été 日本 データ 🤙",
		"tags #nostr @someone https://example.com/a?b=c&d=e",
		"x" + strings.Repeat("y", 2100) + " short words stay",
		"+ 🤙 ⚡",
		"",
		"the the the repeated repeated words",
	}
	// insert saves every content in both communities (idb has no row),
	// under ids derived from round, so each round's rows are new.
	insert := func(round string) {
		t.Helper()
		for i, content := range contents {
			for _, c := range []string{ida, idb} {
				_, err := owner.Exec(ctx, `INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw)
VALUES ($1, $2, sha256(convert_to($3, 'UTF8')), sha256('au'::bytea), 1, '[]', $4, decode(repeat('00', 64), 'hex'), '{}'::bytea)`,
					c, 1700000000+i, round+c+string(rune('a'+i)), content)
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	insert("before")
	if err := Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	insert("after")

	var pairs, differ int
	err := owner.QueryRow(ctx, `
SELECT count(*), count(*) FILTER (WHERE b.tsv IS DISTINCT FROM a.tsv)
FROM event_search b
JOIN events eb ON eb.community_id = b.community_id AND eb.id = b.event_id
JOIN events ea ON ea.community_id = eb.community_id AND ea.created_at = eb.created_at AND ea.id <> eb.id
JOIN event_search a ON a.community_id = ea.community_id AND a.event_id = ea.id
WHERE eb.id = sha256(convert_to('before' || b.community_id::text || chr(ascii('a') + (eb.created_at - 1700000000)::int), 'UTF8'))`).
		Scan(&pairs, &differ)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * len(contents); pairs != want || differ != 0 {
		t.Fatalf("%d pairs of search rows (want %d), %d differ", pairs, want, differ)
	}
	var long, other int
	err = owner.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE octet_length(u.lexeme) > 2046),
       count(*) FILTER (WHERE NOT starts_with(u.lexeme, buzz_search_prefix(s.community_id)))
FROM event_search s, unnest(s.tsv) AS u`).Scan(&long, &other)
	if err != nil || long != 0 || other != 0 {
		t.Fatalf("%d lexemes past the limit, %d not of their community (%v)", long, other, err)
	}
	var prefixA, prefixB string
	if err := owner.QueryRow(ctx, `SELECT buzz_search_prefix('`+ida+`'), buzz_search_prefix('`+idb+`')`).Scan(&prefixA, &prefixB); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(prefixA, "x") || strings.HasPrefix(prefixA, "u") || prefixB != "u"+strings.ReplaceAll(idb, "-", "")+"x" {
		t.Fatalf("prefixes %q and %q", prefixA, prefixB)
	}

	// Down restores the SQL functions and gives the same rows again.
	if _, err := p.DownTo(ctx, 290); err != nil {
		t.Fatal(err)
	}
	var lang string
	if err := owner.QueryRow(ctx, `SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.proname = 'buzz_search_prefix'`).Scan(&lang); err != nil || lang != "sql" {
		t.Fatalf("buzz_search_prefix is %q after down (%v)", lang, err)
	}
}
