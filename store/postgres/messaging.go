package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var (
	_ store.CommunityKindsStore = (*Store)(nil)
	_ store.AgentOwnerStore     = (*Store)(nil)
)

// CommunityKinds implements store.CommunityKindsStore.
func (s *Store) CommunityKinds(ctx context.Context, c tenant.CommunityID) (string, error) {
	var k string
	if err := s.pool.QueryRow(ctx, `SELECT kind_allowlist FROM communities WHERE id = $1`, c.UUID()).Scan(&k); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", store.ErrNoCommunity
		}
		return "", fmt.Errorf("postgres: community kinds: %w", err)
	}
	return k, nil
}

// SetCommunityKinds implements store.CommunityKindsStore.
func (s *Store) SetCommunityKinds(ctx context.Context, c tenant.CommunityID, kinds string) error {
	if len(kinds) > store.MaxKindsSetting {
		return fmt.Errorf("postgres: kind allow-list setting over %d bytes", store.MaxKindsSetting)
	}
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE communities SET kind_allowlist = $2 WHERE id = $1`, c.UUID(), kinds)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNoCommunity
		}
		return queueAudit(ctx, tx, c, audit.Record{Action: audit.CommunityPolicyChanged, Actor: audit.ActorFrom(ctx),
			Detail: map[string]any{"kinds": kinds}})
	})
	switch {
	case errors.Is(err, store.ErrNoCommunity):
		return err
	case err != nil:
		return fmt.Errorf("postgres: set community kinds: %w", err)
	}
	s.audit.pending(c)
	return nil
}

// RecordAgentOwner implements store.AgentOwnerStore: an INSERT … ON
// CONFLICT DO NOTHING, then the row on record, so every pod agrees.
func (s *Store) RecordAgentOwner(ctx context.Context, c tenant.CommunityID, agent, owner string, at time.Time) (store.AgentOwner, bool, error) {
	var (
		got      store.AgentOwner
		recorded bool
	)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO agent_owners (community_id, agent, owner, recorded_at)
VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, c.UUID(), agent, owner, at)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			got, recorded = store.AgentOwner{Owner: owner, RecordedAt: at}, true
			return nil
		}
		return tx.QueryRow(ctx, `SELECT owner, recorded_at FROM agent_owners WHERE community_id = $1 AND agent = $2`,
			c.UUID(), agent).Scan(&got.Owner, &got.RecordedAt)
	})
	if err != nil {
		return store.AgentOwner{}, false, fmt.Errorf("postgres: record agent owner: %w", err)
	}
	return got, recorded, nil
}

// AgentOwnerOf implements store.AgentOwnerStore.
func (s *Store) AgentOwnerOf(ctx context.Context, c tenant.CommunityID, agent string) (store.AgentOwner, bool, error) {
	var (
		o     store.AgentOwner
		found bool
	)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT owner, recorded_at FROM agent_owners WHERE community_id = $1 AND agent = $2`,
			c.UUID(), agent).Scan(&o.Owner, &o.RecordedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		return store.AgentOwner{}, false, fmt.Errorf("postgres: agent owner: %w", err)
	}
	return o, found, nil
}
