package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/tenant"
)

// OpenWithSyncForTest is Open with sync in place of the fdatasync that
// makes the write-ahead log durable: a test holds syncs back or fails
// them. sync receives the log's file.
func OpenWithSyncForTest(ctx context.Context, path string, sync func(*os.File) error, opts ...Option) (*Store, error) {
	return open(ctx, path, sync, opts...)
}

// SyncData is the sync Open uses.
func SyncData(f *os.File) error { return syncData(f) }

// TextIndexState reports how many segments the text index has and its
// automerge setting, and checks the index's integrity (FTS5's
// integrity-check, on the writer).
func TextIndexState(ctx context.Context, s *Store) (segments, automerge int, err error) {
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(DISTINCT segid) FROM events_fts_idx`).Scan(&segments); err != nil {
		return 0, 0, err
	}
	if automerge, err = automergeSetting(ctx, s.rdb); err != nil {
		return 0, 0, err
	}
	err = s.submit(ctx, func(w *writer) error {
		_, err := w.conn.ExecContext(w.ctx, `INSERT INTO events_fts (events_fts) VALUES ('integrity-check')`)
		return err
	})
	return segments, automerge, err
}

// WithMergePagesForTest sets how many pages one background merge step of
// the text index writes at most.
func WithMergePagesForTest(n int) Option {
	return func(c *config) error {
		c.mergePages = n
		return nil
	}
}

// TextRows waits for the text indexer to take in every event, then
// returns the rowids of events_fts (engine seqs when the events are in the
// LSM engine).
func (s *Store) TextRows(ctx context.Context) ([]int64, error) {
	for deadline := time.Now().Add(10 * time.Second); s.text != nil; {
		s.text.mu.Lock()
		pending := s.text.busy || len(s.text.removed) > 0 || s.text.through < s.ev.LastSeq()
		s.text.mu.Unlock()
		if !pending {
			break
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the text index did not catch up in 10 s")
		}
		s.text.notify()
		time.Sleep(5 * time.Millisecond)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT rowid FROM events_fts ORDER BY rowid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// SearchPostings waits for the text index to take in every event, then
// returns how many postings of events_fts a search of community c for
// query reads: for each FTS5 term of the MATCH expression the search runs
// (as the search builds it), the number of rows its doclist holds
// (fts5vocab), summed; and how many rows the expression matches.
func (s *Store) SearchPostings(ctx context.Context, c tenant.CommunityID, query string) (postings, matches int, err error) {
	if _, err := s.TextRows(ctx); err != nil {
		return 0, 0, err
	}
	q, err := search.Parse(query)
	if err != nil {
		return 0, 0, err
	}
	cseq, err := s.ftsCommunity(ctx, c)
	if err != nil {
		return 0, 0, err
	}
	match := ftsMatch(cseq, q)
	// fts5vocab is a table of the connection's temp schema: the read
	// connections are read-only, so it is read on the writer's.
	err = s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, `CREATE VIRTUAL TABLE IF NOT EXISTS temp.events_fts_terms USING fts5vocab(main, events_fts, row)`); err != nil {
			return fmt.Errorf("fts5vocab: %w", err)
		}
		// The terms are the quoted phrases' tokens, split as the ascii
		// tokenizer splits them (at spaces: the tokens hold no other ASCII
		// separator).
		for _, phrase := range strings.Split(strings.Trim(match, `"`), `" "`) {
			for _, term := range strings.Fields(phrase) {
				var n int
				err := w.conn.QueryRowContext(w.ctx, `SELECT coalesce((SELECT doc FROM temp.events_fts_terms WHERE term = ?), 0)`, term).Scan(&n)
				if err != nil {
					return err
				}
				postings += n
			}
		}
		return w.conn.QueryRowContext(w.ctx, `SELECT count(*) FROM events_fts WHERE events_fts MATCH ?`, match).Scan(&matches)
	})
	return postings, matches, err
}
