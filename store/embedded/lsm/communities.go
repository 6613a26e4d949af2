package lsm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/buzzrelay/buzz/tenant"
)

// errNoSuchCommunity: an id that is not in this store's registry (ids come
// from its own directory, so this is a caller's bug, not a client's).
var errNoSuchCommunity = errors.New("lsm: no such community")

func hostKey(host string) key { return newKey(pHost, 1+len(host)).bytes([]byte(host)) }

func communityKey(cseq uint32) key { return newKey(pCommunity, 5).u32(cseq) }

func communityIDKey(id tenant.CommunityID) key {
	u := id.UUID()
	return newKey(pCommunityID, 17).bytes(u[:])
}

// LookupHost implements tenant.Directory: the community whose host is
// normalizedHost, or tenant.ErrUnmappedHost (also wrapped around a failed
// lookup, so callers fail closed either way).
func (s *Store) LookupHost(ctx context.Context, normalizedHost string) (tenant.CommunityID, error) {
	if err := s.life.enter(); err != nil {
		return tenant.CommunityID{}, errors.Join(tenant.ErrUnmappedHost, err)
	}
	defer s.life.leave()
	if err := ctx.Err(); err != nil {
		return tenant.CommunityID{}, errors.Join(tenant.ErrUnmappedHost, err)
	}
	v, ok, err := s.get(hostKey(normalizedHost))
	switch {
	case err != nil:
		return tenant.CommunityID{}, errors.Join(tenant.ErrUnmappedHost, err)
	case !ok:
		return tenant.CommunityID{}, tenant.ErrUnmappedHost
	}
	cseq, id, err := decodeHostValue(v)
	if err != nil {
		return tenant.CommunityID{}, errors.Join(tenant.ErrUnmappedHost, err)
	}
	s.remember(id, cseq)
	return id, nil
}

// EnsureCommunity implements store.Communities. normalizedHost must already
// be in tenant.NormalizeHost form.
func (s *Store) EnsureCommunity(ctx context.Context, normalizedHost string) (tenant.CommunityID, bool, error) {
	norm, err := tenant.NormalizeHost(normalizedHost)
	if err != nil {
		return tenant.CommunityID{}, false, fmt.Errorf("lsm: EnsureCommunity: %w", err)
	}
	if norm != normalizedHost {
		return tenant.CommunityID{}, false, fmt.Errorf("lsm: EnsureCommunity: host %q is not normalized (want %q)", normalizedHost, norm)
	}
	if err := s.life.enter(); err != nil {
		return tenant.CommunityID{}, false, err
	}
	defer s.life.leave()
	if err := ctx.Err(); err != nil {
		return tenant.CommunityID{}, false, err
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	hk := hostKey(normalizedHost)
	v, ok, err := s.get(hk)
	if err != nil {
		return tenant.CommunityID{}, false, err
	}
	if ok {
		cseq, id, err := decodeHostValue(v)
		if err != nil {
			return tenant.CommunityID{}, false, err
		}
		s.remember(id, cseq)
		return id, false, nil
	}
	id := tenant.NewCommunityID()
	if _, err := s.register(id, normalizedHost); err != nil {
		return tenant.CommunityID{}, false, err
	}
	return id, true, nil
}

// register gives community id the next seq, durably, under s.regMu. host
// is "" for a community of an external registry.
func (s *Store) register(id tenant.CommunityID, host string) (uint32, error) {
	cseq := s.lastCseq + 1
	if cseq == 0 {
		return 0, errors.New("lsm: community numbers exhausted")
	}
	u := id.UUID()
	b := s.db.NewBatch()
	defer b.Close()
	w := writes{b: b}
	if host != "" {
		w.set(hostKey(host), append(binary.BigEndian.AppendUint32(nil, cseq), u[:]...))
	}
	w.set(communityKey(cseq), append(u[:], host...))
	w.set(communityIDKey(id), binary.BigEndian.AppendUint32(nil, cseq))
	if w.err != nil {
		return 0, fmt.Errorf("lsm: register community: %w", w.err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, fmt.Errorf("lsm: register community: %w", err)
	}
	s.lastCseq = cseq
	s.remember(id, cseq)
	return cseq, nil
}

func decodeHostValue(v []byte) (uint32, tenant.CommunityID, error) {
	if len(v) != 20 {
		return 0, tenant.CommunityID{}, fmt.Errorf("%w: host entry of %d bytes", errCorrupt, len(v))
	}
	var u [16]byte
	copy(u[:], v[4:])
	return binary.BigEndian.Uint32(v), tenant.FromUUID(u), nil
}

func (s *Store) remember(id tenant.CommunityID, cseq uint32) {
	s.commMu.Lock()
	s.comm[id] = cseq
	s.commMu.Unlock()
}

// enterCommunity starts an operation on community c's events: it fails
// (having started nothing) if the store is closed, ctx is done or c is
// unknown, and otherwise returns c's sequence number; the caller ends the
// operation with s.life.leave().
func (s *Store) enterCommunity(ctx context.Context, c tenant.CommunityID) (uint32, error) {
	if err := s.life.enter(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		s.life.leave()
		return 0, err
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		s.life.leave()
		return 0, err
	}
	return cseq, nil
}

// communitySeq maps a community to its sequence number, or
// errNoSuchCommunity (with an external registry, an unknown community is
// registered).
func (s *Store) communitySeq(ctx context.Context, c tenant.CommunityID) (uint32, error) {
	if c.IsZero() {
		return 0, errNoSuchCommunity
	}
	s.commMu.RLock()
	cseq, ok := s.comm[c]
	s.commMu.RUnlock()
	if ok {
		return cseq, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	v, ok, err := s.get(communityIDKey(c))
	switch {
	case err != nil:
		return 0, err
	case !ok && s.external:
		s.regMu.Lock()
		defer s.regMu.Unlock()
		if v, ok, err = s.get(communityIDKey(c)); err != nil {
			return 0, err
		} else if !ok {
			return s.register(c, "")
		}
	case !ok:
		return 0, errNoSuchCommunity
	}
	if len(v) != 4 {
		return 0, fmt.Errorf("%w: community entry of %d bytes", errCorrupt, len(v))
	}
	cseq = binary.BigEndian.Uint32(v)
	s.remember(c, cseq)
	return cseq, nil
}
