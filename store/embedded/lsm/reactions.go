package lsm

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
)

// Reaction slots. A community holds at most one live reaction per author,
// target event and emoji (store.ReactionKey): the engine keeps the slot's
// key ('r') in the same batch as the reaction that holds it, refuses a
// second reaction for a held slot (store.ErrReactionHeld), and frees the
// slot in the batch that removes its holder (a deletion, an expiry). So the
// slot and its holder cannot disagree, and a reaction costs no write
// beyond its own.

// reaction is the slot a reaction (kind 7) holds: its target and emoji as
// messaging.ParseReaction reads them. A reaction that does not parse holds
// no slot.
type reaction struct {
	target [32]byte
	emoji  string
	ok     bool
}

func reactionOf(ev *nostr.Event) reaction {
	if ev.Kind != messaging.KindReaction {
		return reaction{}
	}
	r, err := messaging.ParseReaction(ev)
	if err != nil {
		return reaction{}
	}
	var slot reaction
	slot.ok = nostr.DecodeLowerHex(slot.target[:], r.Target)
	slot.emoji = r.Emoji
	return slot
}

// key is the slot's key in community cseq for author pubkey.
func (r reaction) key(cseq uint32, pubkey []byte) key {
	return reactionKey(cseq, pubkey, r.target[:], r.emoji)
}

// slotsPerCommit bounds the batch of indexSlots.
const slotsPerCommit = 4096

// indexSlots converts a layout 1 store: it writes the slot of every live
// reaction, in each community's kind timeline order (newest first), the
// first reaction of a slot holding it; then it records layout 2. A crash
// part way leaves layout 1 and the slots written so far, which the next
// Open keeps.
func (s *Store) indexSlots() error {
	b := s.db.NewIndexedBatch()
	defer func() { _ = b.Close() }()
	n := 0
	for cseq := uint32(1); cseq <= s.lastCseq; cseq++ {
		p := kindPrefix(cseq, messaging.KindReaction)
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
		if err != nil {
			return fmt.Errorf("lsm: reaction slots: %w", err)
		}
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()
			if len(k) != len(p)+16 {
				_ = it.Close()
				return fmt.Errorf("%w: kind key of %d bytes", errCorrupt, len(k))
			}
			seq := binary.BigEndian.Uint64(k[len(k)-8:])
			rec, ok, err := readValue(s.db, eventKey(seq))
			if err == nil && !ok {
				err = fmt.Errorf("%w: kind entry of missing event %d", errCorrupt, seq)
			}
			if err != nil {
				_ = it.Close()
				return err
			}
			h, raw, err := decodeRecord(rec)
			if err != nil {
				_ = it.Close()
				return err
			}
			ev, err := nostr.ParseEvent(raw)
			if err != nil {
				_ = it.Close()
				return fmt.Errorf("%w: event %d: %v", errCorrupt, seq, err)
			}
			slot := reactionOf(ev)
			if !slot.ok {
				continue
			}
			rk := slot.key(cseq, h.pubkey[:])
			if _, held, err := readValue(b, rk); err != nil {
				_ = it.Close()
				return err
			} else if held {
				continue
			}
			if err := b.Set(rk, binary.BigEndian.AppendUint64(nil, seq), nil); err != nil {
				_ = it.Close()
				return fmt.Errorf("lsm: reaction slots: %w", err)
			}
			if n++; n%slotsPerCommit == 0 {
				if err := b.Commit(pebble.Sync); err != nil {
					_ = it.Close()
					return fmt.Errorf("lsm: reaction slots: %w", err)
				}
				_ = b.Close()
				b = s.db.NewIndexedBatch()
			}
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("lsm: reaction slots: %w", err)
		}
	}
	if err := b.Set([]byte{pFormat}, []byte{formatVersion}, nil); err != nil {
		return fmt.Errorf("lsm: reaction slots: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("lsm: reaction slots: %w", err)
	}
	if n > 0 {
		s.log.Info("lsm: store converted to layout 2", "reaction_slots", n)
	}
	return nil
}
