package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var errNoSuchCommunity = errors.New("sqlite: no such community")

// prepared is an event ready for the writer: everything that can be computed
// without the database is done on the caller's goroutine, keeping the single
// writer's work to SQL.
type prepared struct {
	community int64
	id        []byte
	pubkey    []byte
	createdAt int64
	kind      int
	raw       []byte
	channel   any // the h tag's channel as a 16-byte BLOB, or nil (NULL)

	coordinate bool   // replaceable or addressable
	d          string // "" for replaceable kinds

	hasExpiry bool
	expiresAt int64

	tags []store.IndexedTag

	parent []byte // a reply's parent (store.IsThreadReply), else nil

	delIDs    [][]byte           // kind 5: ids named by "e" tags
	delCoords []store.Coordinate // kind 5: the requester's own coordinates named by "a" tags

	// kind 5: the request's audit record and the community's id, for the
	// chain entry written with it. Channel commands set cid too, and ev,
	// for the events engine (WithLSMEvents).
	audit *audit.Record
	cid   tenant.CommunityID
	ev    *nostr.Event
}

// Save implements store.EventStore.
func (s *Store) Save(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	if ev == nil {
		return errors.New("sqlite: Save(nil)")
	}
	if nostr.IsEphemeral(ev.Kind) {
		return fmt.Errorf("sqlite: ephemeral kind %d is never stored", ev.Kind)
	}
	if s.ev != nil || s.evOff {
		return s.lsmSave(ctx, c, ev)
	}
	p, err := prepare(ev)
	if err != nil {
		return err
	}
	p.community, err = s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	if ev.Kind == nostr.KindDeletion && !s.cfg.noAudit && !store.DeletionAuditOff(ctx) {
		r := store.DeletionAudit(ev)
		p.audit, p.cid = &r, c
	}
	return s.submit(ctx, func(w *writer) error { return w.save(p) })
}

func prepare(ev *nostr.Event) (*prepared, error) {
	id, ok := nostr.DecodeHex32(ev.ID)
	if !ok {
		return nil, errors.New("sqlite: event id is not 64 lowercase hex characters")
	}
	pk, ok := nostr.DecodeHex32(ev.PubKey)
	if !ok {
		return nil, errors.New("sqlite: event pubkey is not 64 lowercase hex characters")
	}
	p := &prepared{
		id:        id,
		pubkey:    pk,
		createdAt: ev.CreatedAt,
		kind:      ev.Kind,
		raw:       ev.AppendJSON(nil),
	}
	ch, ok, err := channel.OfEvent(ev)
	if err != nil {
		return nil, err
	}
	if ok {
		p.channel = ch[:]
	}
	switch {
	case nostr.IsReplaceable(ev.Kind):
		p.coordinate = true
	case nostr.IsAddressable(ev.Kind):
		p.coordinate = true
		p.d = ev.DTag()
	}
	p.expiresAt, p.hasExpiry = ev.Expiration()

	p.tags = store.IndexedTags(ev)
	p.parent = threadParent(ev)
	if ev.Kind == nostr.KindDeletion {
		ids, coords := store.DeletionTargets(ev)
		for _, id := range ids {
			b, _ := nostr.DecodeHex32(id)
			p.delIDs = append(p.delIDs, b)
		}
		p.delCoords = coords
	}
	return p, nil
}
