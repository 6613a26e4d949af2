package lsm

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// prepared is an event ready to be written: everything that does not need
// the database is computed before Save takes the writer's lock.
type prepared struct {
	h    header
	raw  []byte
	tags []store.IndexedTag

	coordinate bool   // replaceable or addressable
	d          string // the coordinate's "d" ("" for replaceable kinds)

	delIDs    [][32]byte         // kind 5: distinct ids named by "e" tags
	delCoords []store.Coordinate // kind 5: distinct own coordinates named by "a" tags
}

func prepare(ev *nostr.Event) (*prepared, error) {
	p := &prepared{raw: ev.AppendJSON(nil), tags: store.IndexedTags(ev)}
	if !decodeHex32(p.h.id[:], ev.ID) {
		return nil, errors.New("lsm: event id is not 64 lowercase hex characters")
	}
	if !decodeHex32(p.h.pubkey[:], ev.PubKey) {
		return nil, errors.New("lsm: event pubkey is not 64 lowercase hex characters")
	}
	if ev.CreatedAt < 0 {
		return nil, errors.New("lsm: event created_at is negative")
	}
	p.h.createdAt, p.h.kind = ev.CreatedAt, ev.Kind
	ch, ok, err := channel.OfEvent(ev)
	if err != nil {
		return nil, err
	}
	if ok {
		p.h.channel, p.h.hasChan = ch, true
	}
	p.h.expiresAt, p.h.hasExpiry = ev.Expiration()
	switch {
	case nostr.IsReplaceable(ev.Kind):
		p.coordinate = true
	case nostr.IsAddressable(ev.Kind):
		p.coordinate = true
		p.d = ev.DTag()
	}
	if ev.Kind == nostr.KindDeletion {
		ids, coords := store.DeletionTargets(ev)
		for _, s := range ids {
			var id [32]byte
			decodeHex32(id[:], s)
			if !slices.Contains(p.delIDs, id) {
				p.delIDs = append(p.delIDs, id)
			}
		}
		for _, c := range coords {
			if !slices.Contains(p.delCoords, c) {
				p.delCoords = append(p.delCoords, c)
			}
		}
	}
	return p, nil
}

// Save implements store.EventStore.
func (s *Store) Save(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
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
	if err := s.life.enter(); err != nil {
		return err
	}
	defer s.life.leave()
	if p.h.cseq, err = s.communitySeq(ctx, c); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	err = s.apply(p)
	s.mu.Unlock()
	if err != nil && !isOutcome(err) {
		return err
	}
	// The outcome is acknowledged only once what it was decided on (the
	// new writes, or the stored state that refused them) is on disk.
	if serr := s.durable(); serr != nil {
		return serr
	}
	return err
}

// isOutcome reports whether err is one of Save's sentinel results.
func isOutcome(err error) bool {
	return errors.Is(err, store.ErrDuplicate) || errors.Is(err, store.ErrSuperseded) || errors.Is(err, store.ErrDeleted)
}

// apply checks p against the stored state and writes it; it runs under
// s.mu. Every check runs before the first write, so a sentinel result has
// written nothing.
func (s *Store) apply(p *prepared) error {
	cseq, h := p.h.cseq, &p.h
	// A deletion aimed at a deletion request has no effect, so a deletion
	// request is never refused as deleted.
	if h.kind != nostr.KindDeletion {
		if dead, err := s.has(tombstoneKey(cseq, h.id[:], h.pubkey[:])); err != nil {
			return err
		} else if dead {
			return store.ErrDeleted
		}
	}
	idk := idKey(cseq, h.id[:])
	if dup, err := s.has(idk); err != nil {
		return err
	} else if dup {
		return store.ErrDuplicate
	}
	b := s.db.NewBatch()
	defer b.Close()
	var ck key
	if p.coordinate {
		v, ok, err := s.get(waterKey(cseq, h.kind, h.pubkey[:], p.d))
		if err != nil {
			return err
		}
		if ok && len(v) == 8 && h.createdAt <= int64(binary.BigEndian.Uint64(v)) {
			return store.ErrDeleted
		}
		ck = coordKey(cseq, h.kind, h.pubkey[:], p.d)
		head, ok, err := s.recordAt(ck)
		if err != nil {
			return err
		}
		if ok {
			if head.h.createdAt > h.createdAt ||
				(head.h.createdAt == h.createdAt && bytes.Compare(head.h.id[:], h.id[:]) < 0) {
				return store.ErrSuperseded
			}
			if err := s.remove(b, head); err != nil {
				return err
			}
		}
	}

	seq := s.lastSeq + 1
	seqv := binary.BigEndian.AppendUint64(nil, seq)
	rec := p.h.appendTo(make([]byte, 0, headerLen+len(p.raw)))
	rec = append(rec, p.raw...)
	w := writes{b: b}
	w.set(eventKey(seq), rec)
	w.set(idk, seqv)
	meta := h.metaValue()
	for _, k := range timelineEntries(h, p.tags, seq) {
		w.set(k, meta)
	}
	if h.hasExpiry {
		w.set(expiryKey(h.expiresAt, seq), nil)
	}
	if ck != nil {
		w.set(ck, seqv)
	}
	if h.kind == nostr.KindDeletion {
		if err := s.applyDeletion(&w, p); err != nil {
			return err
		}
	}
	if w.err != nil {
		return fmt.Errorf("lsm: save: %w", w.err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("lsm: save: %w", err)
	}
	s.lastSeq = seq
	s.cache.put(seq, rec)
	return nil
}

// timelineEntries returns the timeline keys of an event: community, kind,
// author, author and kind, each tag, and its channel.
func timelineEntries(h *header, tags []store.IndexedTag, seq uint64) []key {
	ks := make([]key, 0, 5+len(tags))
	ks = append(ks,
		entry(timePrefix(h.cseq), h.createdAt, seq),
		entry(kindPrefix(h.cseq, h.kind), h.createdAt, seq),
		entry(authorPrefix(h.cseq, h.pubkey[:]), h.createdAt, seq),
		entry(authorKindPrefix(h.cseq, h.pubkey[:], h.kind), h.createdAt, seq),
	)
	for _, t := range tags {
		ks = append(ks, entry(tagPrefix(h.cseq, t.Name[0], t.Value), h.createdAt, seq))
	}
	if h.hasChan {
		ks = append(ks, entry(channelPrefix(h.cseq, h.channel[:]), h.createdAt, seq))
	}
	return ks
}

// writes collects a batch's first error, so a sequence of writes is checked
// once.
type writes struct {
	b   *pebble.Batch
	err error
}

func (w *writes) set(k, v []byte) {
	if w.err == nil {
		w.err = w.b.Set(k, v, nil)
	}
}

func (w *writes) del(k []byte) {
	if w.err == nil {
		w.err = w.b.Delete(k, nil)
	}
}

// stored is a record read back: its seq, header and raw JSON.
type stored struct {
	seq uint64
	h   header
	raw []byte
}

// recordAt follows an index key whose value is a seq (id and coordinate
// keys) to the record.
func (s *Store) recordAt(k []byte) (stored, bool, error) {
	v, ok, err := s.get(k)
	if err != nil || !ok {
		return stored{}, false, err
	}
	if len(v) != 8 {
		return stored{}, false, fmt.Errorf("%w: index value of %d bytes", errCorrupt, len(v))
	}
	return s.record(binary.BigEndian.Uint64(v))
}

// record reads the event with seq.
func (s *Store) record(seq uint64) (stored, bool, error) {
	rec, ok, err := records{cache: s.cache, r: s.db}.get(seq)
	if err != nil || !ok {
		return stored{}, false, err
	}
	h, raw, err := decodeRecord(rec)
	if err != nil {
		return stored{}, false, err
	}
	return stored{seq: seq, h: h, raw: raw}, true, nil
}

// remove deletes a stored event and every index entry of it. The tags it
// was indexed under are read back from its raw JSON.
func (s *Store) remove(b *pebble.Batch, r stored) error {
	ev, err := nostr.ParseEvent(r.raw)
	if err != nil {
		return fmt.Errorf("%w: event %d: %v", errCorrupt, r.seq, err)
	}
	w := writes{b: b}
	w.del(eventKey(r.seq))
	w.del(idKey(r.h.cseq, r.h.id[:]))
	for _, k := range timelineEntries(&r.h, store.IndexedTags(ev), r.seq) {
		w.del(k)
	}
	if r.h.hasExpiry {
		w.del(expiryKey(r.h.expiresAt, r.seq))
	}
	switch {
	case nostr.IsReplaceable(r.h.kind):
		w.del(coordKey(r.h.cseq, r.h.kind, r.h.pubkey[:], ""))
	case nostr.IsAddressable(r.h.kind):
		w.del(coordKey(r.h.cseq, r.h.kind, r.h.pubkey[:], ev.DTag()))
	}
	if w.err != nil {
		return fmt.Errorf("lsm: remove: %w", w.err)
	}
	return nil
}

// applyDeletion carries out a NIP-09 request being saved: tombstones for the
// ids it names (durable, so a later arrival by the requester is refused),
// removal of those ids when they are the requester's own and not deletion
// requests themselves, and coordinate watermarks with removal of the
// version they cover.
func (s *Store) applyDeletion(w *writes, p *prepared) error {
	cseq, h := p.h.cseq, &p.h
	for _, id := range p.delIDs {
		w.set(tombstoneKey(cseq, id[:], h.pubkey[:]), nil)
		r, ok, err := s.recordAt(idKey(cseq, id[:]))
		if err != nil {
			return err
		}
		if ok && r.h.pubkey == h.pubkey && r.h.kind != nostr.KindDeletion {
			if err := s.remove(w.b, r); err != nil {
				return err
			}
		}
	}
	for _, c := range p.delCoords {
		wk := waterKey(cseq, c.Kind, h.pubkey[:], c.D)
		v, ok, err := s.get(wk)
		if err != nil {
			return err
		}
		if !ok || len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < h.createdAt {
			w.set(wk, binary.BigEndian.AppendUint64(nil, uint64(h.createdAt)))
		}
		r, ok, err := s.recordAt(coordKey(cseq, c.Kind, h.pubkey[:], c.D))
		if err != nil {
			return err
		}
		if ok && r.h.createdAt <= h.createdAt {
			if err := s.remove(w.b, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeHex32 decodes exactly 64 lowercase hex characters into dst.
func decodeHex32(dst []byte, s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}
