package sqlite

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
)

// The text index is written once per transaction (writer.indexText), so an
// event inserted and then replaced or deleted inside the same transaction,
// and a gift wrap, must leave the index exactly as the per-row trigger did:
// one index row per stored event that is not a gift wrap.
func TestTextIndexWithinOneTransaction(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := storetest.Community(t, s, "fts.example")
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	a := storetest.NewAuthor(t)
	kept := a.Event(t, 1, 1_700_000_001, "alpha kept")
	gone := a.Event(t, 1, 1_700_000_002, "bravo deleted")
	v1 := a.Event(t, 0, 1_700_000_003, "charlie old profile")
	v2 := a.Event(t, 0, 1_700_000_004, "delta new profile")
	wrap := a.Event(t, 1059, 1_700_000_005, "echo wrapped", nostr.Tag{"p", a.PubKey})
	del := a.Deletion(t, 1_700_000_006, []string{gone.ID}, nil)
	later := a.Event(t, 1, 1_700_000_007, "foxtrot after")

	var ps []*prepared
	for _, ev := range []*nostr.Event{kept, gone, v1, v2, wrap, del, later} {
		p, err := prepare(ev)
		if err != nil {
			t.Fatal(err)
		}
		p.community = cseq
		ps = append(ps, p)
	}
	// One request, so all of it is one transaction.
	if err := s.submit(ctx, func(w *writer) error {
		for _, p := range ps {
			if err := w.save(p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	for word, want := range map[string][]string{
		"alpha": {kept.ID}, "bravo": nil, "charlie": nil, "delta": {v2.ID},
		"echo": nil, "foxtrot": {later.ID},
	} {
		f, err := nostr.ParseFilter([]byte(`{"search":"` + word + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		got := storetest.QueryIDs(t, s, c, f)
		if len(got) != len(want) || (len(want) == 1 && got[0] != want[0]) {
			t.Errorf("search %q = %v, want %v", word, got, want)
		}
	}
	var indexed, stored int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM events_fts_docsize`).Scan(&indexed); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE kind <> 1059`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if indexed != stored {
		t.Errorf("text index has %d rows, events (not gift wraps) %d", indexed, stored)
	}
	if err := s.submit(ctx, func(w *writer) error {
		_, err := w.conn.ExecContext(ctx, `INSERT INTO events_fts (events_fts) VALUES ('integrity-check')`)
		return err
	}); err != nil {
		t.Errorf("integrity-check: %v", err)
	}
}
