package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/tenant"
)

// LookupHost returns the community a normalized host (or one of its
// aliases) selects. Unmapped and archived hosts return
// tenant.ErrUnmappedHost.
func (s *Store) LookupHost(ctx context.Context, normalizedHost string) (tenant.CommunityID, error) {
	var id [16]byte
	err := s.pool.QueryRow(ctx, `
SELECT id FROM communities WHERE lower(host) = lower($1) AND host = $1 AND archived_at IS NULL
UNION ALL
SELECT c.id FROM community_host_aliases a JOIN communities c ON c.id = a.community_id
WHERE lower(a.host) = lower($1) AND a.host = $1 AND c.archived_at IS NULL
LIMIT 1`, normalizedHost).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return tenant.CommunityID{}, tenant.ErrUnmappedHost
	}
	if err != nil {
		return tenant.CommunityID{}, fmt.Errorf("postgres: lookup host: %w", err)
	}
	return tenant.FromUUID(id), nil
}

// EnsureCommunity maps normalizedHost to a community, creating one if the
// host is unmapped. Concurrent callers, in any process, get the same id: the
// unique index on lower(host) arbitrates.
func (s *Store) EnsureCommunity(ctx context.Context, normalizedHost string) (tenant.CommunityID, bool, error) {
	if normalizedHost == "" {
		return tenant.CommunityID{}, false, errors.New("postgres: ensure community: empty host")
	}
	if id, err := s.LookupHost(ctx, normalizedHost); err == nil {
		return id, false, nil
	} else if !errors.Is(err, tenant.ErrUnmappedHost) {
		return tenant.CommunityID{}, false, err
	}
	fresh := tenant.NewCommunityID()
	var id [16]byte
	var created bool
	err := s.pool.QueryRow(ctx, `
WITH ins AS (
    INSERT INTO communities (id, host) VALUES ($1, $2)
    ON CONFLICT ((lower(host))) DO NOTHING
    RETURNING id)
SELECT id, true FROM ins
UNION ALL
SELECT id, false FROM communities WHERE lower(host) = lower($2) AND NOT EXISTS (SELECT 1 FROM ins)
LIMIT 1`, fresh.UUID(), normalizedHost).Scan(&id, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		// The conflicting row was committed after this statement's snapshot
		// was taken: a fresh statement sees it.
		id, err := s.LookupHost(ctx, normalizedHost)
		if err != nil {
			return tenant.CommunityID{}, false, fmt.Errorf("postgres: ensure community: %w", err)
		}
		return id, false, nil
	}
	if err != nil {
		return tenant.CommunityID{}, false, fmt.Errorf("postgres: ensure community: %w", err)
	}
	return tenant.FromUUID(id), created, nil
}
