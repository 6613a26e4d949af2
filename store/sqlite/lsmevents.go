package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/lsm"
	"github.com/buzzrelay/buzz/tenant"
)

// EventsDirSuffix names the directory beside the database file that holds
// the events when they are kept in the LSM engine (WithLSMEvents).
const EventsDirSuffix = "-events"

// WithLSMEvents makes a new store keep its events in an LSM engine (package
// store/lsm, on pebble) in a directory beside the database file (its path
// plus EventsDirSuffix), instead of in SQLite's tables; everything else
// (communities, channels, moderation, workflows, audit chains) stays in
// SQLite, which indexes their text in the background (textIndexer). Saving
// an event then costs about two thirds of the CPU at the same durability (Save
// returns after the engine's log is synced), and queries and COUNTs are
// faster (docs/benchmarks.md). buzzd uses it for new stores
// unless told otherwise; a library caller chooses here.
//
// A store is one or the other for its whole life: Open opens a store whose
// events directory exists with its events there, option or not, and refuses
// this option for a store whose SQLite tables hold events. The events
// directory admits one process at a time (SQLite alone admits several).
//
// Channel commands and deletions write to both: the engine's part commits
// after SQLite's commit is synced, so a crash in between can leave a
// command's effect (or a deletion's audit entry) without its event — never
// an event without its effect — and the caller, unanswered, sends it again.
func WithLSMEvents() Option {
	return func(c *config) error {
		c.lsmEvents = true
		return nil
	}
}

// WithoutEvents opens the store for tools that never touch events (the
// admin and audit commands): a store keeping its events in the LSM engine
// is opened without it, so the tool runs while a relay has the engine open
// (the engine admits one process), and every event operation fails.
func WithoutEvents() Option {
	return func(c *config) error {
		c.noEvents = true
		return nil
	}
}

// errNoEvents is every event operation's error on a store opened
// WithoutEvents whose events are in the LSM engine.
var errNoEvents = errors.New("sqlite: this store was opened without its events (WithoutEvents)")

// eventsOff returns errNoEvents when the store's events are in the LSM
// engine and it was opened without them.
func (s *Store) eventsOff() error {
	if s.evOff {
		return errNoEvents
	}
	return nil
}

// openEvents opens the LSM events directory when the store keeps its
// events there, and refuses a store that would have its events split.
func (s *Store) openEvents(ctx context.Context) error {
	dir := s.path + EventsDirSuffix
	_, statErr := os.Stat(dir)
	exists := statErr == nil
	if !s.cfg.lsmEvents && !exists {
		return nil
	}
	if exists {
		if err := s.splitEvents(ctx); err != nil {
			return err
		}
	}
	if s.cfg.noEvents {
		if s.cfg.lsmEvents {
			return errors.New("sqlite: WithLSMEvents and WithoutEvents together")
		}
		s.evOff = true
		return nil
	}
	if !exists {
		var one int
		err := s.wdb.QueryRowContext(ctx, `SELECT 1 FROM events LIMIT 1`).Scan(&one)
		if err == nil {
			return fmt.Errorf("sqlite: this store keeps its events in SQLite: open it without WithLSMEvents (buzzd: BUZZ_DB_EVENTS=sqlite)")
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: open: %w", err)
		}
	}
	ev, err := lsm.Open(ctx, dir, lsm.WithExternalRegistry(), lsm.WithLogger(s.cfg.log),
		lsm.WithOnRemove(func(seqs []uint64) {
			if ix := s.text; ix != nil {
				ix.removedSeqs(seqs)
			}
		}))
	if err != nil {
		return fmt.Errorf("sqlite: open events: %w", err)
	}
	s.ev = ev
	return nil
}

// LSMEvents reports whether the store keeps its events in the LSM engine.
func (s *Store) LSMEvents() bool { return s.ev != nil }

// eventsTx returns the open batch's transaction on the events engine,
// beginning it at first use; runBatch commits it after SQLite's commit.
func (w *writer) eventsTx() (*lsm.Tx, error) {
	if w.evTx == nil {
		tx, err := w.ev.Begin(w.ctx)
		if err != nil {
			return nil, internal("events", err)
		}
		w.evTx = tx
	}
	return w.evTx, nil
}

// lsmSave is Save with the events in the engine. A deletion request goes
// through the writer, with its audit entry and the removal of the replies
// it deletes from their threads, and so does a thread reply, recorded in
// its thread (store.ThreadStore); any other event goes to the engine
// directly.
func (s *Store) lsmSave(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	if err := s.eventsOff(); err != nil {
		return err
	}
	if parent := threadParent(ev); parent != nil {
		return s.lsmSaveReply(ctx, c, cseq, ev, parent)
	}
	if ev.Kind != nostr.KindDeletion {
		return s.ev.Save(ctx, c, ev)
	}
	var rec *audit.Record
	if !s.cfg.noAudit && !store.DeletionAuditOff(ctx) {
		r := store.DeletionAudit(ev)
		rec = &r
	}
	pk, _ := nostr.DecodeHex32(ev.PubKey)
	var ids [][]byte
	targets, _ := store.DeletionTargets(ev)
	for _, id := range targets {
		if b, ok := nostr.DecodeHex32(id); ok {
			ids = append(ids, b)
		}
	}
	return s.submit(ctx, func(w *writer) error {
		tx, err := w.eventsTx()
		if err != nil {
			return err
		}
		if err := tx.Save(w.ctx, c, ev); err != nil {
			if isOutcome(err) {
				return err
			}
			return internal("save", err)
		}
		if err := w.removeReplies(cseq, pk, ids...); err != nil {
			return err
		}
		if rec == nil {
			return nil
		}
		return w.appendAudit(cseq, c, *rec)
	})
}
