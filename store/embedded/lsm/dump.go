package lsm

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/buzzrelay/buzz/tenant"
)

// Dump is what a store holds, for carrying it over to another store (the
// embedded store's conversion of an older layout), each piece with its
// community. Nil funcs are skipped.
type Dump struct {
	// Event receives every live event's JSON, in the order they were
	// saved.
	Event func(c tenant.CommunityID, raw []byte) error
	// Tombstone receives every NIP-09 "e" deletion: event id by pubkey
	// is refused (hex).
	Tombstone func(c tenant.CommunityID, id, pubkey string) error
	// Watermark receives every NIP-09 "a" deletion: the versions of
	// (kind, pubkey, d) up to upTo are refused.
	Watermark func(c tenant.CommunityID, kind int, pubkey, d string, upTo int64) error
}

// Dump calls d's funcs with the store's content, read from one snapshot;
// it stops at the first error a func returns.
func (s *Store) Dump(ctx context.Context, d Dump) error {
	if err := s.life.enter(); err != nil {
		return err
	}
	defer s.life.leave()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	comms := map[uint32]tenant.CommunityID{}
	community := func(cseq uint32) (tenant.CommunityID, error) {
		if c, ok := comms[cseq]; ok {
			return c, nil
		}
		v, ok, err := readValue(snap, communityKey(cseq))
		if err != nil {
			return tenant.CommunityID{}, err
		}
		if !ok || len(v) < 16 {
			return tenant.CommunityID{}, fmt.Errorf("%w: community %d is not registered", errCorrupt, cseq)
		}
		c := tenant.FromUUID([16]byte(v[:16]))
		comms[cseq] = c
		return c, nil
	}
	each := func(prefix byte, fn func(k, v []byte) error) error {
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: []byte{prefix}, UpperBound: []byte{prefix + 1}})
		if err != nil {
			return fmt.Errorf("lsm: iterate: %w", err)
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			v, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("lsm: iterate: %w", err)
			}
			if err := fn(it.Key(), v); err != nil {
				return err
			}
		}
		return it.Error()
	}
	if d.Event != nil {
		err := each(pEvent, func(_, v []byte) error {
			h, raw, err := decodeRecord(v)
			if err != nil {
				return err
			}
			c, err := community(h.cseq)
			if err != nil {
				return err
			}
			return d.Event(c, raw)
		})
		if err != nil {
			return err
		}
	}
	if d.Tombstone != nil {
		// 'd' cseq(4) id(32) pubkey(32)
		err := each(pTombstone, func(k, _ []byte) error {
			if len(k) != 69 {
				return fmt.Errorf("%w: tombstone key of %d bytes", errCorrupt, len(k))
			}
			c, err := community(binary.BigEndian.Uint32(k[1:5]))
			if err != nil {
				return err
			}
			return d.Tombstone(c, hex.EncodeToString(k[5:37]), hex.EncodeToString(k[37:69]))
		})
		if err != nil {
			return err
		}
	}
	if d.Watermark != nil {
		// 'w' cseq(4) kind(4) pubkey(32) len(d)(4) d → upTo(8)
		err := each(pWater, func(k, v []byte) error {
			if len(k) < 45 || len(v) != 8 || int(binary.BigEndian.Uint32(k[41:45])) != len(k)-45 {
				return fmt.Errorf("%w: watermark of %d bytes", errCorrupt, len(k))
			}
			c, err := community(binary.BigEndian.Uint32(k[1:5]))
			if err != nil {
				return err
			}
			return d.Watermark(c, int(binary.BigEndian.Uint32(k[5:9])), hex.EncodeToString(k[9:41]), string(k[45:]),
				int64(binary.BigEndian.Uint64(v)))
		})
		if err != nil {
			return err
		}
	}
	return nil
}
