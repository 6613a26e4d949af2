package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// A checkpoint copies the pages of committed transactions from the
// write-ahead log into the database file, so that the log can start over.
// SQLite runs one by itself inside the COMMIT that takes the log past
// wal_autocheckpoint pages: the writer then copies and syncs up to ~32 MiB
// before it can answer that batch, and every write queued behind it, an
// event published live among them, waits (tens of milliseconds here).
//
// checkpointLoop takes that work off the commit path: once the store has
// written nothing for the checkpoint idle delay, or the delay's maximum has
// passed since the first commit it has not yet copied, it runs a PASSIVE
// checkpoint on a connection of its own. PASSIVE never blocks the writer or
// a reader; it copies what no reader still needs and leaves the rest to the
// next round. The writer's own autocheckpoint stays as the bound for a store
// that never pauses long enough.
//
// Durability does not change: the checkpointing connection syncs the log
// before copying from it and the database file before SQLite records the
// copy as done (synchronous=NORMAL), so the log is never restarted over
// frames that are not yet durable in the database file.
func (s *Store) checkpointLoop() {
	defer close(s.done)
	if s.ckdb == nil {
		for range s.wrote {
		}
		return
	}
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	var first time.Time // first commit not yet checkpointed; zero when none
	for {
		select {
		case _, ok := <-s.wrote:
			if !ok {
				idle.Stop()
				return
			}
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			if now.Sub(first) < s.cfg.checkpointMax {
				idle.Reset(s.cfg.checkpointIdle)
				continue
			}
			idle.Stop()
		case <-idle.C:
		}
		first = time.Time{}
		if err := s.checkpoint(context.Background()); err != nil {
			s.cfg.log.Warn("sqlite: background checkpoint", "err", err)
		}
	}
}

// checkpoint runs one PASSIVE checkpoint on the checkpointing connection.
func (s *Store) checkpoint(ctx context.Context) error {
	var busy, frames, copied int
	err := s.ckdb.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	if err != nil {
		return fmt.Errorf("sqlite: checkpoint: %w", err)
	}
	s.cfg.log.Debug("sqlite: checkpoint", "frames", frames, "copied", copied)
	return nil
}

// openCheckpointer opens the checkpointing connection, when the background
// checkpointer is on and the store has a write-ahead log.
func (s *Store) openCheckpointer(ctx context.Context) error {
	if s.cfg.checkpointIdle == 0 || s.wal == nil {
		return nil
	}
	db, err := sql.Open("sqlite", s.dsn(false))
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s.ckdb = db
	// Open the connection now, while the file is known to be there, not
	// at the first checkpoint.
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	return nil
}
