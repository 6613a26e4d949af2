package embedded

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
	"github.com/buzzrelay/buzz/store/embedded/lsm"
	"github.com/buzzrelay/buzz/tenant"
)

// convertInfo reports what convertToLSM did.
type convertInfo struct {
	// Already is set when the events were in the LSM engine already and
	// nothing was done.
	Already bool
	// Events, Tombstones and Watermarks count what was carried over: live
	// events, NIP-09 "e" deletions and "a" deletions (coordinates).
	Events, Tombstones, Watermarks int64
	// Reactions counts the reactions left out because an earlier one held
	// their slot (store.ErrReactionHeld): an older store could hold both
	// when one came in through an import.
	Reactions int64
	Duration  time.Duration
}

// convertingSuffix names the directory convertToLSM fills before renaming
// it into place (EventsDirSuffix).
const convertingSuffix = ".converting"

// convertBatch is how many events one engine transaction of a conversion
// writes.
const convertBatch = 1000

// convertToLSM moves the events of the store in database file file from
// SQLite's tables (the old layout of a data directory) into the LSM engine
// in the directory beside it (EventsDirSuffix): every live event, and the
// NIP-09 state that refuses deleted ones. The rest of the store
// (communities, channels, threads, moderation, workflows, audit chains)
// stays where it is, and the text index is rebuilt in the background at
// the next Open. Open runs it when it finds events in SQLite's tables.
//
// It needs the store to itself: it takes SQLite's exclusive lock, and
// fails with store.ErrInUse while another process (a relay, a tool) has
// the database open, before changing anything. It is idempotent: a store
// whose events are in the engine already is left alone (Already), and one
// interrupted at any point is finished by running it again. The engine's
// directory is filled under a temporary name and renamed into place once
// synced (from then on the store's events are in the engine); only then
// are SQLite's event tables emptied.
func convertToLSM(ctx context.Context, file string) (convertInfo, error) {
	start := time.Now()
	var info convertInfo
	db, err := openExclusive(ctx, file)
	if err != nil {
		return info, err
	}
	defer db.Close()
	dir := file + EventsDirSuffix
	_, statErr := os.Stat(dir)
	hasRows, err := sqliteHoldsEvents(ctx, db)
	if err != nil {
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
func fillEngine(ctx context.Context, db *sql.DB, dir string) (convertInfo, error) {
	var info convertInfo
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
		switch err := t.Save(ctx, c, e); {
		case errors.Is(err, store.ErrReactionHeld):
			info.Reactions++
			continue
		case err != nil:
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
