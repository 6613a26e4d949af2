package embedded

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded/lsm"
	"github.com/buzzrelay/buzz/tenant"
)

// A write batch that changes the events engine together with SQLite rows
// (a channel command and its event, a deletion request and its audit
// entry, a thread reply and its thread node) commits in SQLite only: the
// engine's part is recorded in the same SQLite transaction as a redo
// record (table event_redo), applied to the engine after the commit, and
// deleted once the engine's part is durable. Open replays the records a
// crash left (replayRedo) before the store serves. Applying a record again
// changes nothing: saving an event the engine holds, or has refused since,
// is a no-op, and so are removing an event already gone and recording a
// deletion again. So SQLite's commit is the one commit point: after a
// crash, a write either happened in both engines or in neither.
//
// Events that go with no SQLite row are saved in the engine directly.

// redoOp is one operation of the engine's part of a write.
type redoOp struct {
	Op     string          `json:"op"` // "save", "remove" or "tombstone"
	C      string          `json:"c"`  // the community id, 32 hex characters
	Event  json.RawMessage `json:"event,omitempty"`
	ID     string          `json:"id,omitempty"`
	PubKey string          `json:"pubkey,omitempty"`
}

// redoTx is the events engine's transaction of the open batch: every
// change it makes is also recorded for the batch's redo record.
type redoTx struct {
	*lsm.Tx
	w *writer
}

// Save stores ev in the engine's transaction and records it.
func (t redoTx) Save(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	if err := t.Tx.Save(ctx, c, ev); err != nil {
		return err
	}
	t.w.redo = append(t.w.redo, redoOp{Op: "save", C: communityHex(c), Event: ev.AppendJSON(nil)})
	return nil
}

// Remove removes event id in the engine's transaction and records it.
func (t redoTx) Remove(ctx context.Context, c tenant.CommunityID, id string) (bool, error) {
	ok, err := t.Tx.Remove(ctx, c, id)
	if err != nil {
		return ok, err
	}
	t.w.redo = append(t.w.redo, redoOp{Op: "remove", C: communityHex(c), ID: id})
	return ok, nil
}

// Tombstone refuses event id by pubkey from then on, in the engine's
// transaction, and records it.
func (t redoTx) Tombstone(ctx context.Context, c tenant.CommunityID, id, pubkey string) error {
	if err := t.Tx.Tombstone(ctx, c, id, pubkey); err != nil {
		return err
	}
	t.w.redo = append(t.w.redo, redoOp{Op: "tombstone", C: communityHex(c), ID: id, PubKey: pubkey})
	return nil
}

func communityHex(c tenant.CommunityID) string {
	u := c.UUID()
	return hex.EncodeToString(u[:])
}

func parseCommunityHex(s string) (tenant.CommunityID, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return tenant.CommunityID{}, err
	}
	return communityOf(b)
}

// writeRedo inserts the open batch's redo record, when its engine part
// changed anything; it runs in the batch's transaction, before COMMIT.
func (w *writer) writeRedo() error {
	w.redoSeq = 0
	if len(w.redo) == 0 {
		return nil
	}
	ops, err := json.Marshal(w.redo)
	if err != nil {
		return internal("redo", err)
	}
	if err := w.queryRow(`INSERT INTO event_redo (ops) VALUES (?) RETURNING seq`, ops).Scan(&w.redoSeq); err != nil {
		return internal("redo", err)
	}
	return nil
}

// dropRedo deletes, inside the open batch's transaction, the redo
// records whose engine part syncLoop has seen durable.
func (w *writer) dropRedo(durable int64) error {
	if durable <= w.redoDropped {
		return nil
	}
	if _, err := w.exec(`DELETE FROM event_redo WHERE seq <= ?`, durable); err != nil {
		return internal("redo", err)
	}
	w.redoDropped = durable
	return nil
}

// applyRedo applies one redo record's operations to the engine in one
// transaction; what the engine already holds, or refuses, is left as is.
func applyRedo(ctx context.Context, ev *lsm.Store, raw []byte) error {
	var ops []redoOp
	if err := json.Unmarshal(raw, &ops); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	tx, err := ev.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, op := range ops {
		c, err := parseCommunityHex(op.C)
		if err != nil {
			return fmt.Errorf("community %q: %w", op.C, err)
		}
		switch op.Op {
		case "save":
			e, err := nostr.ParseEvent(op.Event)
			if err != nil {
				return fmt.Errorf("event: %w", err)
			}
			if err := tx.Save(ctx, c, e); !isOutcome(err) {
				return err
			}
		case "remove":
			if _, err := tx.Remove(ctx, c, op.ID); err != nil {
				return err
			}
		case "tombstone":
			if err := tx.Tombstone(ctx, c, op.ID, op.PubKey); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown operation %q", op.Op)
		}
	}
	return tx.Commit()
}

// replayRedo applies the redo records a crash left to the engine, makes
// them durable there, and deletes them. It runs in open, before the
// writer goroutine starts.
func (s *Store) replayRedo(ctx context.Context) error {
	rows, err := s.w.conn.QueryContext(ctx, `SELECT seq, ops FROM event_redo ORDER BY seq`)
	if err != nil {
		return fmt.Errorf("sqlite: redo: %w", err)
	}
	type record struct {
		seq int64
		ops []byte
	}
	var recs []record
	for rows.Next() {
		var r record
		if err := rows.Scan(&r.seq, &r.ops); err != nil {
			rows.Close()
			return fmt.Errorf("sqlite: redo: %w", err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return fmt.Errorf("sqlite: redo: %w", err)
	}
	rows.Close()
	if len(recs) == 0 {
		return nil
	}
	for _, r := range recs {
		if err := applyRedo(ctx, s.ev, r.ops); err != nil {
			return fmt.Errorf("sqlite: redo record %d: %w", r.seq, err)
		}
	}
	if err := s.ev.Sync(); err != nil {
		return fmt.Errorf("sqlite: redo: %w", err)
	}
	last := recs[len(recs)-1].seq
	if _, err := s.w.conn.ExecContext(ctx, `DELETE FROM event_redo WHERE seq <= ?`, last); err != nil {
		return fmt.Errorf("sqlite: redo: %w", err)
	}
	s.w.redoDropped = last
	s.cfg.log.Info("sqlite: applied the events engine's part of writes committed before a crash", "records", len(recs))
	return nil
}
