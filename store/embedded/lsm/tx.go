package lsm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Tx is a write transaction over the events, for a store that keeps other
// state beside them and changes both together (the embedded store's channel
// commands: a channel's membership and the command event). It holds the
// writer's lock from Begin to Commit or Rollback, its reads see its own
// writes, and nothing of it is visible before Commit. Commit makes it
// visible, not durable: the caller syncs (Sync) before acknowledging it.
// A Tx is not safe for concurrent use.
type Tx struct {
	s    *Store
	t    *txn
	done bool
}

// Begin starts a transaction. The caller must end it with Commit or
// Rollback.
func (s *Store) Begin(ctx context.Context) (*Tx, error) {
	if err := s.life.enter(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		s.life.leave()
		return nil, err
	}
	s.mu.Lock()
	return &Tx{s: s, t: s.newTxn(true)}, nil
}

// Commit applies the transaction's writes (a no-op for none) and ends it.
func (tx *Tx) Commit() error {
	if tx.done {
		return errors.New("lsm: transaction already ended")
	}
	err := tx.t.commit()
	tx.end()
	return err
}

// Rollback drops the transaction's writes and ends it; after Commit it
// does nothing.
func (tx *Tx) Rollback() {
	if !tx.done {
		tx.end()
	}
}

func (tx *Tx) end() {
	tx.done = true
	tx.t.close()
	tx.s.mu.Unlock()
	tx.s.life.leave()
}

// Sync returns once everything committed before it is durable.
func (s *Store) Sync() error {
	if err := s.life.enter(); err != nil {
		return err
	}
	defer s.life.leave()
	return s.durable()
}

// Save checks and writes ev as Store.Save does (the same sentinel errors,
// having written nothing), inside the transaction.
func (tx *Tx) Save(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	if ev == nil {
		return errors.New("lsm: Save(nil)")
	}
	if nostr.IsEphemeral(ev.Kind) {
		return fmt.Errorf("lsm: ephemeral kind %d is never stored", ev.Kind)
	}
	p, err := prepare(ev)
	if err != nil {
		return err
	}
	if p.h.cseq, err = tx.s.communitySeq(ctx, c); err != nil {
		return err
	}
	return tx.t.apply(p)
}

// Stored is what Tx.Event reports of a live event.
type Stored struct {
	PubKey    string
	Kind      int
	CreatedAt int64
	Channel   channel.ID // zero for a community-wide event
}

// Event returns the live event with id, if the community holds it.
func (tx *Tx) Event(ctx context.Context, c tenant.CommunityID, id string) (Stored, bool, error) {
	r, ok, err := tx.lookup(ctx, c, id)
	if err != nil || !ok {
		return Stored{}, false, err
	}
	out := Stored{PubKey: hexOf(r.h.pubkey[:]), Kind: r.h.kind, CreatedAt: r.h.createdAt}
	if r.h.hasChan {
		out.Channel = r.h.channel
	}
	return out, true, nil
}

func (tx *Tx) lookup(ctx context.Context, c tenant.CommunityID, id string) (stored, bool, error) {
	var b [32]byte
	if !nostr.DecodeLowerHex(b[:], id) {
		return stored{}, false, nil
	}
	cseq, err := tx.s.communitySeq(ctx, c)
	if err != nil {
		return stored{}, false, err
	}
	return tx.t.recordAt(idKey(cseq, b[:]))
}

// Remove removes the live event with id (with every index entry), if the
// community holds it, and reports whether it did.
func (tx *Tx) Remove(ctx context.Context, c tenant.CommunityID, id string) (bool, error) {
	r, ok, err := tx.lookup(ctx, c, id)
	if err != nil || !ok {
		return false, err
	}
	return true, tx.t.remove(r)
}

// Tombstone records that event id by pubkey is deleted: Save refuses it
// from then on (store.ErrDeleted).
func (tx *Tx) Tombstone(ctx context.Context, c tenant.CommunityID, id, pubkey string) error {
	var ib, pb [32]byte
	if !nostr.DecodeLowerHex(ib[:], id) || !nostr.DecodeLowerHex(pb[:], pubkey) {
		return fmt.Errorf("lsm: tombstone of a malformed id or pubkey")
	}
	cseq, err := tx.s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	tk := tombstoneKey(cseq, ib[:], pb[:])
	tx.s.tombs.add(tk)
	if err := tx.t.b.Set(tk, nil, nil); err != nil {
		return fmt.Errorf("lsm: tombstone: %w", err)
	}
	return nil
}

// Newest returns the created_at of the newest live event of channel ch
// with one of kinds.
func (tx *Tx) Newest(ctx context.Context, c tenant.CommunityID, ch channel.ID, kinds ...int) (int64, bool, error) {
	cseq, err := tx.s.communitySeq(ctx, c)
	if err != nil {
		return 0, false, err
	}
	prefix := channelPrefix(cseq, ch[:])
	it, err := tx.t.r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, false, fmt.Errorf("lsm: iterate: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var h header
		v, err := it.ValueAndErr()
		if err != nil {
			return 0, false, fmt.Errorf("lsm: iterate: %w", err)
		}
		if err := decodeMeta(v, &h); err != nil {
			return 0, false, err
		}
		for _, k := range kinds {
			if h.kind == k {
				createdAt, _ := suffix(it.Key())
				return createdAt, true, nil
			}
		}
	}
	if err := it.Error(); err != nil {
		return 0, false, fmt.Errorf("lsm: iterate: %w", err)
	}
	return 0, false, nil
}

// Seen reports whether Save would refuse ev as already known: store.ErrDuplicate
// when the community holds its id, store.ErrDeleted when its author deleted
// it (never for a deletion request), nil otherwise.
func (tx *Tx) Seen(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	var id, pk [32]byte
	if !nostr.DecodeLowerHex(id[:], ev.ID) || !nostr.DecodeLowerHex(pk[:], ev.PubKey) {
		return errors.New("lsm: event id or pubkey is not 64 lowercase hex characters")
	}
	cseq, err := tx.s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	if dup, err := tx.t.stored(tx.s.ids, idKey(cseq, id[:])); err != nil {
		return err
	} else if dup {
		return store.ErrDuplicate
	}
	if ev.Kind == nostr.KindDeletion {
		return nil
	}
	if dead, err := tx.t.stored(tx.s.tombs, tombstoneKey(cseq, id[:], pk[:])); err != nil {
		return err
	} else if dead {
		return store.ErrDeleted
	}
	return nil
}

// Checkpoint writes a copy of the store into dir, which must not exist,
// as the transaction found it: every write committed before Begin, none of
// the transaction's own. The transaction holds the writer's lock, so no
// event is written meanwhile; the copy is a directory Open opens, its
// table files hard-linked to the store's where the file system allows
// (they are immutable) and its log copied, everything synced before it
// returns. A store embedding this one takes its own snapshot while the
// transaction is open, so that the two copies agree (embedded.Store.Backup).
func (tx *Tx) Checkpoint(dir string) error {
	if tx.done {
		return errors.New("lsm: transaction already ended")
	}
	if err := tx.s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("lsm: checkpoint: %w", err)
	}
	return nil
}

// Watermark records that the versions of coordinate (kind, pubkey, d) up
// to and including upTo are deleted (NIP-09 "a" deletions): Save refuses
// them from then on (store.ErrDeleted). A lower watermark than the one
// stored changes nothing. It removes no live event: it carries deletion
// state over from another store (a conversion), where the covered
// versions are already gone.
func (tx *Tx) Watermark(ctx context.Context, c tenant.CommunityID, kind int, pubkey, d string, upTo int64) error {
	var pb [32]byte
	if !nostr.DecodeLowerHex(pb[:], pubkey) || upTo < 0 {
		return fmt.Errorf("lsm: watermark of a malformed pubkey or time")
	}
	cseq, err := tx.s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	wk := waterKey(cseq, kind, pb[:], d)
	v, ok, err := tx.t.get(wk)
	if err != nil {
		return err
	}
	if ok && len(v) == 8 && int64(binary.BigEndian.Uint64(v)) >= upTo {
		return nil
	}
	if err := tx.t.b.Set(wk, binary.BigEndian.AppendUint64(nil, uint64(upTo)), nil); err != nil {
		return fmt.Errorf("lsm: watermark: %w", err)
	}
	return nil
}
