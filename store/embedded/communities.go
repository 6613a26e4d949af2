package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// LookupHost implements tenant.Directory: the community whose host, or one of
// whose aliases, is normalizedHost. An unmapped host, and the host of an
// archived community, return tenant.ErrUnmappedHost; a failed lookup returns
// an error wrapping it too, so callers fail closed either way.
func (s *Store) LookupHost(ctx context.Context, normalizedHost string) (tenant.CommunityID, error) {
	var (
		seq int64
		raw []byte
	)
	err := s.rdb.QueryRowContext(ctx, `
SELECT seq, id FROM communities WHERE host = ?1 AND archived_at IS NULL
UNION ALL
SELECT c.seq, c.id FROM community_host_aliases a JOIN communities c ON c.seq = a.community
WHERE a.host = ?1 AND c.archived_at IS NULL
LIMIT 1`, normalizedHost).Scan(&seq, &raw)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return tenant.CommunityID{}, tenant.ErrUnmappedHost
	case err != nil:
		return tenant.CommunityID{}, errors.Join(tenant.ErrUnmappedHost, internal("lookup host", err))
	}
	id, err := communityFromBytes(raw)
	if err != nil {
		return tenant.CommunityID{}, errors.Join(tenant.ErrUnmappedHost, err)
	}
	s.remember(id, seq)
	return id, nil
}

// EnsureCommunity implements store.Communities. normalizedHost must already
// be in tenant.NormalizeHost form.
func (s *Store) EnsureCommunity(ctx context.Context, normalizedHost string) (tenant.CommunityID, bool, error) {
	norm, err := tenant.NormalizeHost(normalizedHost)
	if err != nil {
		return tenant.CommunityID{}, false, fmt.Errorf("sqlite: EnsureCommunity: %w", err)
	}
	if norm != normalizedHost {
		return tenant.CommunityID{}, false, fmt.Errorf("sqlite: EnsureCommunity: host %q is not normalized (want %q)", normalizedHost, norm)
	}
	var (
		id      tenant.CommunityID
		seq     int64
		created bool
	)
	err = s.submit(ctx, func(w *writer) error {
		fresh := tenant.NewCommunityID()
		u := fresh.UUID()
		err := w.insertCommunity.QueryRowContext(w.ctx, u[:], normalizedHost, time.Now().Unix()).Scan(&seq)
		if err == nil {
			id, created = fresh, true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return internal("ensure community", err)
		}
		var raw []byte
		if err := w.communityByHost.QueryRowContext(w.ctx, normalizedHost).Scan(&seq, &raw); err != nil {
			return internal("ensure community", err)
		}
		id, err = communityFromBytes(raw)
		return err
	})
	if err != nil {
		return tenant.CommunityID{}, false, err
	}
	s.remember(id, seq)
	return id, created, nil
}

func communityFromBytes(b []byte) (tenant.CommunityID, error) {
	var u [16]byte
	if len(b) != len(u) {
		return tenant.CommunityID{}, fmt.Errorf("sqlite: corrupt community id (%d bytes)", len(b))
	}
	copy(u[:], b)
	return tenant.FromUUID(u), nil
}

func (s *Store) remember(id tenant.CommunityID, seq int64) {
	s.commMu.Lock()
	s.comm[id] = seq
	s.commMu.Unlock()
}

// communitySeq maps a community to its surrogate key. An unknown community
// is errNoSuchCommunity (an internal error: ids come from this store's own
// directory).
func (s *Store) communitySeq(ctx context.Context, c tenant.CommunityID) (int64, error) {
	if c.IsZero() {
		return 0, errNoSuchCommunity
	}
	s.commMu.RLock()
	seq, ok := s.comm[c]
	s.commMu.RUnlock()
	if ok {
		return seq, nil
	}
	u := c.UUID()
	err := s.rdb.QueryRowContext(ctx, `SELECT seq FROM communities WHERE id = ?`, u[:]).Scan(&seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, errNoSuchCommunity
	case err != nil:
		return 0, internal("community", err)
	}
	s.remember(c, seq)
	return seq, nil
}
