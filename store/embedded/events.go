package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded/lsm"
	"github.com/buzzrelay/buzz/tenant"
)

// EventsDirSuffix names the directory beside the database file that holds
// the events: the LSM engine (package store/embedded/lsm), which admits one process
// at a time (SQLite alone admits several).
const EventsDirSuffix = "-events"

// WithoutEvents opens the store for tools that never touch events (the
// admin and audit commands): the events engine is not opened, so the tool
// runs while a relay has it open (the engine admits one process), and
// every event operation fails. A data directory in the old layout is not
// converted by such an Open (see Open).
func WithoutEvents() Option {
	return func(c *config) error {
		c.noEvents = true
		return nil
	}
}

// errNoEvents is every event operation's error on a store opened
// WithoutEvents.
var errNoEvents = errors.New("sqlite: this store was opened without its events (WithoutEvents)")

// eventsOff returns errNoEvents when the store was opened WithoutEvents.
func (s *Store) eventsOff() error {
	if s.cfg.noEvents {
		return errNoEvents
	}
	return nil
}

// errOldLayout is open's answer for a data directory whose SQLite tables
// still hold events (the old layout, or a conversion interrupted after the
// engine took them): Open converts it and opens it again.
var errOldLayout = errors.New("sqlite: the store's events are in SQLite's tables")

// sqliteHoldsEvents reports whether SQLite's event tables hold anything:
// events or the NIP-09 state that refuses deleted ones. Only a data
// directory in the old layout has any.
func sqliteHoldsEvents(ctx context.Context, db *sql.DB) (bool, error) {
	var any bool
	err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM events) OR EXISTS (SELECT 1 FROM deleted_ids) OR EXISTS (SELECT 1 FROM coord_deletions)`).Scan(&any)
	return any, err
}

// openEvents opens the events engine, unless the store is opened
// WithoutEvents; errOldLayout when SQLite's tables hold events.
func (s *Store) openEvents(ctx context.Context) error {
	if s.cfg.noEvents {
		return nil
	}
	old, err := sqliteHoldsEvents(ctx, s.wdb)
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	if old {
		return errOldLayout
	}
	ev, err := lsm.Open(ctx, s.path+EventsDirSuffix, lsm.WithExternalRegistry(), lsm.WithLogger(s.cfg.log),
		lsm.WithRecordCacheBytes(s.cfg.eventCache),
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

// eventsTx returns the open batch's transaction on the events engine,
// beginning it at first use; its changes go into the batch's redo record
// (redo.go), and runBatch commits it after SQLite's commit.
func (w *writer) eventsTx() (redoTx, error) {
	if w.evTx == nil {
		tx, err := w.ev.Begin(w.ctx)
		if err != nil {
			return redoTx{}, internal("events", err)
		}
		w.evTx = tx
	}
	return redoTx{Tx: w.evTx, w: w}, nil
}

// Save implements store.EventStore. A deletion request goes through the
// writer, with its audit entry and the removal of the replies it deletes
// from their threads, and so does a thread reply, recorded in its thread
// (store.ThreadStore); any other event goes to the engine directly.
func (s *Store) Save(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	return store.Settle(s.SaveStaged(ctx, c, ev))
}

// SaveStaged is Save in two steps, as lsm.Store.SaveStaged: it returns
// once the outcome is decided and applied (queries see a saved event),
// with durable, which returns once it is on disk; the outcome may be
// acknowledged only after durable returned nil. Only an event the engine
// takes alone is staged: a deletion request and a thread reply, written
// with SQLite's records of them, are durable when SaveStaged returns, and
// durable is then nil.
func (s *Store) SaveStaged(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) (durable func() error, err error) {
	if ev == nil {
		return nil, errors.New("sqlite: Save(nil)")
	}
	if nostr.IsEphemeral(ev.Kind) {
		return nil, fmt.Errorf("sqlite: ephemeral kind %d is never stored", ev.Kind)
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := s.eventsOff(); err != nil {
		return nil, err
	}
	if parent := threadParent(ev); parent != nil {
		return nil, s.saveReply(ctx, c, cseq, ev, parent)
	}
	if ev.Kind != nostr.KindDeletion {
		return s.ev.SaveStaged(ctx, c, ev)
	}
	return nil, s.saveDeletion(ctx, c, cseq, ev)
}

// saveDeletion saves a deletion request through the writer, with its audit
// entry and the removal of the replies it deletes from their threads.
func (s *Store) saveDeletion(ctx context.Context, c tenant.CommunityID, cseq int64, ev *nostr.Event) error {
	var rec *audit.Record
	if !store.DeletionAuditOff(ctx) {
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
