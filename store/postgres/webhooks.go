package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

var _ workflow.WebhookSecretStore = (*Store)(nil)

// SetWebhookSecret implements workflow.WebhookSecretStore.
func (s *Store) SetWebhookSecret(ctx context.Context, c tenant.CommunityID, id workflow.ID, hash [32]byte, replace bool) (bool, error) {
	if c.IsZero() {
		return false, workflow.ErrNotFound
	}
	n, err := s.execCountAudited(ctx, c, func(int64) audit.Record { return workflow.WebhookSecretAudit(ctx, id, replace) },
		`UPDATE workflows SET webhook_secret_hash = $3 WHERE community_id = $1 AND id = $2 AND ($4 OR webhook_secret_hash IS NULL)`,
		c.UUID(), [16]byte(id), hash[:], replace)
	if err != nil {
		return false, pgWorkflowErr("set webhook secret", err)
	}
	if n > 0 {
		return true, nil
	}
	if _, _, err := s.WebhookSecret(ctx, c, id); err != nil {
		return false, err
	}
	return false, nil
}

// WebhookSecret implements workflow.WebhookSecretStore.
func (s *Store) WebhookSecret(ctx context.Context, c tenant.CommunityID, id workflow.ID) ([32]byte, bool, error) {
	if c.IsZero() {
		return [32]byte{}, false, workflow.ErrNotFound
	}
	var b pgx.Batch
	b.Queue(`SELECT webhook_secret_hash FROM workflows WHERE community_id = $1 AND id = $2`, c.UUID(), [16]byte(id))
	var h []byte
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(&h)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return [32]byte{}, false, workflow.ErrNotFound
	}
	if err != nil {
		return [32]byte{}, false, pgWorkflowErr("webhook secret", err)
	}
	if len(h) != 32 {
		return [32]byte{}, false, nil
	}
	return [32]byte(h), true, nil
}
