package lsm

import (
	"bytes"
	"context"
	"encoding/binary"
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

	slot reaction // kind 7: the slot the reaction holds (ok false: none)
}

func prepare(ev *nostr.Event) (*prepared, error) {
	p := &prepared{raw: ev.AppendJSON(nil), tags: store.IndexedTags(ev)}
	if !nostr.DecodeLowerHex(p.h.id[:], ev.ID) {
		return nil, errors.New("lsm: event id is not 64 lowercase hex characters")
	}
	if !nostr.DecodeLowerHex(p.h.pubkey[:], ev.PubKey) {
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
	p.slot = reactionOf(ev)
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
			nostr.DecodeLowerHex(id[:], s)
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
	return store.Settle(s.SaveStaged(ctx, c, ev))
}

// SaveStaged is Save in two steps. It returns once the outcome is decided
// and applied, with durable, which returns once what the outcome was
// decided on (the new writes, or the stored state that refused them) is on
// disk, as Save does before it returns: queries see a saved event before
// it is durable, so it can be delivered live meanwhile, but its outcome
// may be acknowledged only after durable returned nil. durable is nil
// when Save would have failed before deciding (a malformed event, a closed
// store); it may be called from any goroutine, once.
func (s *Store) SaveStaged(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) (durable func() error, err error) {
	if ev == nil {
		return nil, errors.New("lsm: Save(nil)")
	}
	if nostr.IsEphemeral(ev.Kind) {
		return nil, fmt.Errorf("lsm: ephemeral kind %d is never stored", ev.Kind)
	}
	p, err := prepare(ev)
	if err != nil {
		return nil, err
	}
	if err := s.life.enter(); err != nil {
		return nil, err
	}
	defer s.life.leave()
	if p.h.cseq, err = s.communitySeq(ctx, c); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	t := s.newTxn(false)
	if err = t.apply(p); err == nil {
		err = t.commit()
	}
	t.close()
	s.mu.Unlock()
	if err != nil && !store.IsOutcome(err) {
		return nil, err
	}
	return s.syncApplied, err
}

// syncApplied returns once every write applied before the call is on
// disk, or the store's failure to make it so (ErrClosed once it is closed).
func (s *Store) syncApplied() error {
	if err := s.life.enter(); err != nil {
		return err
	}
	defer s.life.leave()
	return s.durable()
}

// SaveBatch saves evs in community c as Save would one after another, in
// their order, but as one write and one sync. results[i] is what Save
// would have returned for evs[i]: nil, one of its sentinel errors, or why
// the event is malformed (an event refused writes nothing). err is a
// failure of the store; then nothing of the batch was written and results
// is nil. It is for bulk loads (a restore), where one sync per event is the
// cost.
func (s *Store) SaveBatch(ctx context.Context, c tenant.CommunityID, evs []*nostr.Event) (results []error, err error) {
	results = make([]error, len(evs))
	ps := make([]*prepared, len(evs))
	for i, ev := range evs {
		switch {
		case ev == nil:
			results[i] = errors.New("lsm: Save(nil)")
		case nostr.IsEphemeral(ev.Kind):
			results[i] = fmt.Errorf("lsm: ephemeral kind %d is never stored", ev.Kind)
		default:
			ps[i], results[i] = prepare(ev)
		}
	}
	if err := s.life.enter(); err != nil {
		return nil, err
	}
	defer s.life.leave()
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	t := s.newTxn(true)
	for i, p := range ps {
		if p == nil {
			continue
		}
		p.h.cseq = cseq
		if err = t.apply(p); err != nil {
			if !store.IsOutcome(err) {
				break
			}
			results[i], err = err, nil
		}
	}
	if err == nil {
		err = t.commit()
	}
	t.close()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// As for Save: acknowledged once on disk, refusals included.
	if err := s.durable(); err != nil {
		return nil, err
	}
	return results, nil
}

// txn is a write in progress; it runs under s.mu. Its checks read through
// r: the database, or for an indexed batch the database with the batch's
// own writes on top. Records enter the cache once the batch commits.
type txn struct {
	s       *Store
	r       pebble.Reader
	b       *pebble.Batch
	cached  []stored
	removed []uint64
}

// newTxn starts a write; indexed makes its reads see its own writes (needed
// when it writes more than one event).
func (s *Store) newTxn(indexed bool) *txn {
	t := &txn{s: s}
	if indexed {
		t.b = s.db.NewIndexedBatch()
		t.r = t.b
	} else {
		t.b = s.db.NewBatch()
		t.r = s.db
	}
	return t
}

// commit applies the batch, visible at once and durable at the next sync.
func (t *txn) commit() error {
	if t.b.Empty() {
		return nil
	}
	if err := t.b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("lsm: commit: %w", err)
	}
	for _, r := range t.cached {
		t.s.cache.put(r.seq, r.rec)
	}
	if n := len(t.cached); n > 0 {
		t.s.visible.Store(t.cached[n-1].seq)
	}
	if len(t.removed) > 0 && t.s.onRemove != nil {
		t.s.onRemove(t.removed)
	}
	return nil
}

func (t *txn) close() { _ = t.b.Close() }

func (t *txn) get(k []byte) ([]byte, bool, error) { return readValue(t.r, k) }

func (t *txn) has(k []byte) (bool, error) {
	_, ok, err := t.get(k)
	return ok, err
}

// apply checks p against the stored state and writes it. Every check runs
// before the first write, so a sentinel result has written nothing.
func (t *txn) apply(p *prepared) error {
	s := t.s
	cseq, h := p.h.cseq, &p.h
	// A deletion aimed at a deletion request has no effect, so a deletion
	// request is never refused as deleted.
	if h.kind != nostr.KindDeletion {
		if dead, err := t.stored(s.tombs, tombstoneKey(cseq, h.id[:], h.pubkey[:])); err != nil {
			return err
		} else if dead {
			return store.ErrDeleted
		}
	}
	idk := idKey(cseq, h.id[:])
	if dup, err := t.stored(s.ids, idk); err != nil {
		return err
	} else if dup {
		return store.ErrDuplicate
	}
	var rk key
	if p.slot.ok {
		// The slot's key exists only while its holder is stored.
		rk = p.slot.key(cseq, h.pubkey[:])
		if held, err := t.stored(s.slots, rk); err != nil {
			return err
		} else if held {
			return store.ErrReactionHeld
		}
	}
	var ck key
	if p.coordinate {
		v, ok, err := t.get(waterKey(cseq, h.kind, h.pubkey[:], p.d))
		if err != nil {
			return err
		}
		if ok && len(v) == 8 && h.createdAt <= int64(binary.BigEndian.Uint64(v)) {
			return store.ErrDeleted
		}
		ck = coordKey(cseq, h.kind, h.pubkey[:], p.d)
		head, ok, err := t.recordAt(ck)
		if err != nil {
			return err
		}
		if ok {
			if head.h.createdAt > h.createdAt ||
				(head.h.createdAt == h.createdAt && bytes.Compare(head.h.id[:], h.id[:]) < 0) {
				return store.ErrSuperseded
			}
			if err := t.remove(head); err != nil {
				return err
			}
		}
	}

	seq := s.lastSeq + 1
	seqv := binary.BigEndian.AppendUint64(nil, seq)
	rec := p.h.appendTo(make([]byte, 0, headerLen+len(p.raw)))
	rec = append(rec, p.raw...)
	w := writes{b: t.b}
	w.set(eventKey(seq), rec)
	s.ids.add(idk)
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
	if rk != nil {
		s.slots.add(rk)
		w.set(rk, seqv)
	}
	if h.kind == nostr.KindDeletion {
		if err := t.applyDeletion(&w, p); err != nil {
			return err
		}
	}
	if w.err != nil {
		return fmt.Errorf("lsm: save: %w", w.err)
	}
	// A seq is taken even if the batch is then dropped: seqs need not be
	// dense, only unique.
	s.lastSeq = seq
	t.cached = append(t.cached, stored{seq: seq, rec: rec})
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

// stored is a record read back: its seq, header and raw JSON (rec is the
// whole record).
type stored struct {
	seq uint64
	h   header
	raw []byte
	rec []byte
}

// recordAt follows an index key whose value is a seq (id and coordinate
// keys) to the record.
func (t *txn) recordAt(k []byte) (stored, bool, error) {
	v, ok, err := t.get(k)
	if err != nil || !ok {
		return stored{}, false, err
	}
	if len(v) != 8 {
		return stored{}, false, fmt.Errorf("%w: index value of %d bytes", errCorrupt, len(v))
	}
	return t.record(binary.BigEndian.Uint64(v))
}

// record reads the event with seq: from the cache (records never change),
// else through t.r, which sees events the batch wrote.
func (t *txn) record(seq uint64) (stored, bool, error) {
	rec, ok, err := records{cache: t.s.cache, r: t.r}.get(seq)
	if err != nil || !ok {
		return stored{}, false, err
	}
	h, raw, err := decodeRecord(rec)
	if err != nil {
		return stored{}, false, err
	}
	return stored{seq: seq, h: h, raw: raw, rec: rec}, true, nil
}

// remove deletes a stored event and every index entry of it. The tags it
// was indexed under are read back from its raw JSON.
func (t *txn) remove(r stored) error {
	ev, err := nostr.ParseEvent(r.raw)
	if err != nil {
		return fmt.Errorf("%w: event %d: %v", errCorrupt, r.seq, err)
	}
	t.removed = append(t.removed, r.seq)
	w := writes{b: t.b}
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
	if slot := reactionOf(ev); slot.ok {
		// Freed only if this event holds it: a store converted from
		// layout 1 may keep a second reaction with the same slot.
		rk := slot.key(r.h.cseq, r.h.pubkey[:])
		v, ok, err := t.get(rk)
		if err != nil {
			return err
		}
		if ok && len(v) == 8 && binary.BigEndian.Uint64(v) == r.seq {
			w.del(rk)
		}
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
func (t *txn) applyDeletion(w *writes, p *prepared) error {
	cseq, h := p.h.cseq, &p.h
	for _, id := range p.delIDs {
		tk := tombstoneKey(cseq, id[:], h.pubkey[:])
		t.s.tombs.add(tk)
		w.set(tk, nil)
		r, ok, err := t.recordAt(idKey(cseq, id[:]))
		if err != nil {
			return err
		}
		if ok && r.h.pubkey == h.pubkey && r.h.kind != nostr.KindDeletion {
			if err := t.remove(r); err != nil {
				return err
			}
		}
	}
	for _, c := range p.delCoords {
		wk := waterKey(cseq, c.Kind, h.pubkey[:], c.D)
		v, ok, err := t.get(wk)
		if err != nil {
			return err
		}
		if !ok || len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < h.createdAt {
			w.set(wk, binary.BigEndian.AppendUint64(nil, uint64(h.createdAt)))
		}
		r, ok, err := t.recordAt(coordKey(cseq, c.Kind, h.pubkey[:], c.D))
		if err != nil {
			return err
		}
		if ok && r.h.createdAt <= h.createdAt {
			if err := t.remove(r); err != nil {
				return err
			}
		}
	}
	return nil
}
