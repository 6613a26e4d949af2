package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/lsm"
	"github.com/buzzrelay/buzz/tenant"
)

// ConvertInfo reports what ConvertToLSM did.
type ConvertInfo struct {
	// Already is set when the events were in the LSM engine already and
	// nothing was done.
	Already bool
	// Events, Tombstones and Watermarks count what was carried over: live
	// events, NIP-09 "e" deletions and "a" deletions (coordinates).
	Events, Tombstones, Watermarks int64
	Duration                       time.Duration
}

// convertingSuffix names the directory ConvertToLSM fills before renaming
// it into place (EventsDirSuffix).
const convertingSuffix = ".converting"

// convertBatch is how many events one engine transaction of a conversion
// writes.
const convertBatch = 1000

// ConvertToLSM moves the events of the store at path (a directory or a
// database file, as for Open) from SQLite's tables into the LSM engine, the
// layout WithLSMEvents gives a new store: every live event, and the NIP-09
// state that refuses deleted ones. The rest of the store (communities,
// channels, moderation, workflows, audit chains) stays where it is, and
// the text index is rebuilt in the background at the next Open.
//
// It needs the store to itself: it takes SQLite's exclusive lock, and
// fails with store.ErrInUse while another process (a relay, a tool) has
// the database open, before changing anything. It is idempotent: a store
// whose events are in the engine already is left alone (Already), and one
// interrupted at any point is finished by running it again. The engine's
// directory is filled under a temporary name and renamed into place once
// synced (from then on the store's events are in the engine); only then
// are SQLite's event tables emptied. Open refuses a store caught between
// the two, naming this function.
func ConvertToLSM(ctx context.Context, path string) (ConvertInfo, error) {
	start := time.Now()
	var info ConvertInfo
	file, err := existingStore(path)
	if err != nil {
		return info, err
	}
	db, err := openExclusive(ctx, file)
	if err != nil {
		return info, err
	}
	defer db.Close()
	dir := file + EventsDirSuffix
	_, statErr := os.Stat(dir)
	var one int
	err = db.QueryRowContext(ctx, `SELECT 1 FROM events LIMIT 1`).Scan(&one)
	hasRows := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return info, fmt.Errorf("sqlite: convert: %w", err)
	}
	if statErr == nil && !hasRows {
		info.Already = true
		info.Duration = time.Since(start)
		return info, nil
	}
	if statErr != nil {
		if info, err = fillEngine(ctx, db, dir); err != nil {
			return info, fmt.Errorf("sqlite: convert: %w", err)
		}
	}
	if err := dropSQLiteEvents(ctx, db); err != nil {
		return info, fmt.Errorf("sqlite: convert: %w", err)
	}
	info.Duration = time.Since(start)
	return info, nil
}

// existingStore resolves path as Open does, without creating anything,
// and fails unless it names a store.
func existingStore(path string) (string, error) {
	if path == "" {
		return "", errors.New("sqlite: empty path")
	}
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = filepath.Join(path, DefaultFileName)
	}
	if _, err := os.Stat(file); err != nil {
		return "", fmt.Errorf("sqlite: no store at %s: %w", path, err)
	}
	return file, incompleteBackup(file)
}

// openExclusive opens the database on one connection that holds SQLite's
// exclusive lock from its first transaction until it closes, migrated to
// this build's schema; store.ErrInUse when another connection, of any
// process, has the database open.
func openExclusive(ctx context.Context, file string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(0)")
	q.Add("_pragma", "locking_mode(EXCLUSIVE)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(OFF)")
	q.Set("_txlock", "exclusive")
	u := url.URL{Scheme: "file", Opaque: file, RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		if strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked") {
			return nil, fmt.Errorf("sqlite: %s is open in another process: %w", file, store.ErrInUse)
		}
		return nil, err
	}
	return db, nil
}

// fillEngine writes the store's events and deletion state into a new
// engine directory and renames it to dir.
func fillEngine(ctx context.Context, db *sql.DB, dir string) (ConvertInfo, error) {
	var info ConvertInfo
	tmp := dir + convertingSuffix
	if err := os.RemoveAll(tmp); err != nil { // left by an interrupted conversion
		return info, err
	}
	ev, err := lsm.Open(ctx, tmp, lsm.WithExternalRegistry())
	if err != nil {
		return info, err
	}
	defer func() {
		if ev != nil {
			ev.Close()
		}
	}()
	var tx *lsm.Tx
	pending := 0
	flush := func() error {
		if tx == nil {
			return nil
		}
		err := tx.Commit()
		tx, pending = nil, 0
		return err
	}
	begin := func() (*lsm.Tx, error) {
		if tx == nil || pending >= convertBatch {
			if err := flush(); err != nil {
				return nil, err
			}
			t, err := ev.Begin(ctx)
			if err != nil {
				return nil, err
			}
			tx = t
		}
		pending++
		return tx, nil
	}
	defer func() {
		if tx != nil {
			tx.Rollback()
		}
	}()

	rows, err := db.QueryContext(ctx, `SELECT c.id, e.raw FROM events e JOIN communities c ON c.seq = e.community ORDER BY e.seq`)
	if err != nil {
		return info, err
	}
	for rows.Next() {
		var cid, raw []byte
		if err := rows.Scan(&cid, &raw); err != nil {
			rows.Close()
			return info, err
		}
		c, err := communityOf(cid)
		if err != nil {
			rows.Close()
			return info, err
		}
		e, err := nostr.ParseEvent(raw)
		if err != nil {
			rows.Close()
			return info, fmt.Errorf("stored event: %w", err)
		}
		t, err := begin()
		if err != nil {
			rows.Close()
			return info, err
		}
		if err := t.Save(ctx, c, e); err != nil {
			rows.Close()
			return info, fmt.Errorf("event %s: %w", e.ID, err)
		}
		info.Events++
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return info, err
	}

	rows, err = db.QueryContext(ctx, `SELECT c.id, d.id, d.pubkey FROM deleted_ids d JOIN communities c ON c.seq = d.community`)
	if err != nil {
		return info, err
	}
	for rows.Next() {
		var cid, id, pk []byte
		if err := rows.Scan(&cid, &id, &pk); err != nil {
			rows.Close()
			return info, err
		}
		c, err := communityOf(cid)
		if err != nil {
			rows.Close()
			return info, err
		}
		t, err := begin()
		if err != nil {
			rows.Close()
			return info, err
		}
		if err := t.Tombstone(ctx, c, hex.EncodeToString(id), hex.EncodeToString(pk)); err != nil {
			rows.Close()
			return info, err
		}
		info.Tombstones++
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return info, err
	}

	rows, err = db.QueryContext(ctx, `SELECT c.id, w.kind, w.pubkey, w.d_tag, w.deleted_up_to FROM coord_deletions w JOIN communities c ON c.seq = w.community`)
	if err != nil {
		return info, err
	}
	for rows.Next() {
		var cid, pk []byte
		var kind int
		var d string
		var upTo int64
		if err := rows.Scan(&cid, &kind, &pk, &d, &upTo); err != nil {
			rows.Close()
			return info, err
		}
		c, err := communityOf(cid)
		if err != nil {
			rows.Close()
			return info, err
		}
		t, err := begin()
		if err != nil {
			rows.Close()
			return info, err
		}
		if err := t.Watermark(ctx, c, kind, hex.EncodeToString(pk), d, upTo); err != nil {
			rows.Close()
			return info, err
		}
		info.Watermarks++
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return info, err
	}
	if err := flush(); err != nil {
		return info, err
	}
	if err := ev.Sync(); err != nil {
		return info, err
	}
	err = ev.Close()
	ev = nil
	if err != nil {
		return info, err
	}
	if err := syncPath(tmp); err != nil {
		return info, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return info, err
	}
	return info, syncPath(filepath.Dir(dir))
}

func communityOf(b []byte) (tenant.CommunityID, error) {
	if len(b) != 16 {
		return tenant.CommunityID{}, fmt.Errorf("community id of %d bytes", len(b))
	}
	return tenant.FromUUID([16]byte(b)), nil
}

// dropSQLiteEvents empties SQLite's event tables, once the engine holds
// the events, and has the text index rebuilt from the engine.
func dropSQLiteEvents(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	for _, q := range []string{
		`INSERT INTO events_fts (events_fts) VALUES ('delete-all')`,
		`DELETE FROM tags`,
		// Thread nodes stay (the events move, they are not deleted): kept
		// aside from the events' delete trigger and put back, which
		// leaves the counters as they were.
		`CREATE TEMP TABLE kept_thread_nodes AS SELECT * FROM thread_nodes`,
		`DELETE FROM events`,
		`INSERT INTO thread_nodes SELECT * FROM kept_thread_nodes`,
		`DROP TABLE kept_thread_nodes`,
		`DELETE FROM deleted_ids`,
		`DELETE FROM coord_deletions`,
		`UPDATE lsm_text_index SET indexed_through = 0`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// Give the emptied pages back to the file system.
	if _, err := db.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// splitEvents refuses a store whose events are in the engine while
// SQLite's tables still hold events: a conversion interrupted after the
// engine took them.
func (s *Store) splitEvents(ctx context.Context) error {
	var one int
	err := s.wdb.QueryRowContext(ctx, `SELECT 1 FROM events LIMIT 1`).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	return fmt.Errorf("sqlite: the store's events are in the LSM engine and SQLite's tables still hold events: a conversion was interrupted; finish it by running it again (ConvertToLSM or ConvertToSQLite; buzzd convert)")
}

// convertedSuffix names the engine's directory once ConvertToSQLite has
// moved its events into SQLite, until it is removed.
const convertedSuffix = ".converted"

// ConvertToSQLite is ConvertToLSM's reverse: it moves the events of the
// store at path from the LSM engine into SQLite's tables (every live
// event, and the NIP-09 state that refuses deleted ones), in one SQLite
// transaction, then removes the engine's directory (renamed first, so an
// interruption never leaves a half-removed engine under its name). The
// same rules hold: the store to itself (store.ErrInUse otherwise, before
// any change), idempotent (Already for a store whose events are in
// SQLite), an interrupted run finished by running it again.
func ConvertToSQLite(ctx context.Context, path string) (ConvertInfo, error) {
	start := time.Now()
	var info ConvertInfo
	file, err := existingStore(path)
	if err != nil {
		return info, err
	}
	db, err := openExclusive(ctx, file)
	if err != nil {
		return info, err
	}
	defer db.Close()
	dir := file + EventsDirSuffix
	if err := os.RemoveAll(dir + convertedSuffix); err != nil { // left by an interrupted run
		return info, fmt.Errorf("sqlite: convert: %w", err)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		info.Already = true
		info.Duration = time.Since(start)
		return info, nil
	}
	var one int
	err = db.QueryRowContext(ctx, `SELECT 1 FROM events LIMIT 1`).Scan(&one)
	hasRows := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return info, fmt.Errorf("sqlite: convert: %w", err)
	}
	if !hasRows { // else an interrupted conversion left both complete
		if info, err = fillSQLite(ctx, db, dir); err != nil {
			return info, fmt.Errorf("sqlite: convert: %w", err)
		}
	}
	if err := os.Rename(dir, dir+convertedSuffix); err != nil {
		return info, fmt.Errorf("sqlite: convert: %w", err)
	}
	if err := syncPath(filepath.Dir(dir)); err != nil {
		return info, fmt.Errorf("sqlite: convert: %w", err)
	}
	if err := os.RemoveAll(dir + convertedSuffix); err != nil {
		return info, fmt.Errorf("sqlite: convert: %w", err)
	}
	info.Duration = time.Since(start)
	return info, nil
}

// fillSQLite copies the engine's content in dir into SQLite's event
// tables, through the writer's own statements, in one transaction, with
// the text index rebuilt for SQLite's seqs.
func fillSQLite(ctx context.Context, db *sql.DB, dir string) (ConvertInfo, error) {
	var info ConvertInfo
	ev, err := lsm.Open(ctx, dir, lsm.WithExternalRegistry())
	if err != nil {
		return info, err
	}
	defer ev.Close()
	w, err := newWriter(ctx, db, nil)
	if err != nil {
		return info, err
	}
	defer w.close()
	comm := map[tenant.CommunityID]int64{}
	seqOf := func(c tenant.CommunityID) (int64, error) {
		if seq, ok := comm[c]; ok {
			return seq, nil
		}
		u := c.UUID()
		var seq int64
		if err := w.conn.QueryRowContext(ctx, `SELECT seq FROM communities WHERE id = ?`, u[:]).Scan(&seq); err != nil {
			return 0, fmt.Errorf("community %s: %w", c, err)
		}
		comm[c] = seq
		return seq, nil
	}
	if _, err := w.begin.ExecContext(ctx); err != nil {
		return info, err
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = w.rollback.ExecContext(context.Background())
		}
	}()
	if _, err := w.conn.ExecContext(ctx, `INSERT INTO events_fts (events_fts) VALUES ('delete-all')`); err != nil {
		return info, err
	}
	err = ev.Dump(ctx, lsm.Dump{
		Event: func(c tenant.CommunityID, raw []byte) error {
			e, err := nostr.ParseEvent(raw)
			if err != nil {
				return fmt.Errorf("stored event: %w", err)
			}
			p, err := prepare(e)
			if err != nil {
				return err
			}
			if p.community, err = seqOf(c); err != nil {
				return err
			}
			if err := w.save(p); err != nil {
				return fmt.Errorf("event %s: %w", e.ID, err)
			}
			info.Events++
			return nil
		},
		Tombstone: func(c tenant.CommunityID, id, pubkey string) error {
			cseq, err := seqOf(c)
			if err != nil {
				return err
			}
			ib, _ := hex.DecodeString(id)
			pb, _ := hex.DecodeString(pubkey)
			if _, err := w.addTombstone.ExecContext(ctx, cseq, ib, pb); err != nil {
				return err
			}
			info.Tombstones++
			return nil
		},
		Watermark: func(c tenant.CommunityID, kind int, pubkey, d string, upTo int64) error {
			cseq, err := seqOf(c)
			if err != nil {
				return err
			}
			pb, _ := hex.DecodeString(pubkey)
			if _, err := w.raiseWatermark.ExecContext(ctx, cseq, kind, pb, d, upTo); err != nil {
				return err
			}
			info.Watermarks++
			return nil
		},
	})
	if err != nil {
		return info, err
	}
	if err := w.indexText(); err != nil {
		return info, err
	}
	if _, err := w.conn.ExecContext(ctx, `UPDATE lsm_text_index SET indexed_through = 0`); err != nil {
		return info, err
	}
	if _, err := w.commit.ExecContext(ctx); err != nil {
		return info, err
	}
	committed = true
	return info, nil
}
