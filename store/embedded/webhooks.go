package embedded

import (
	"context"
	"database/sql"
	"errors"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

var _ workflow.WebhookSecretStore = (*Store)(nil)

// SetWebhookSecret implements workflow.WebhookSecretStore.
func (s *Store) SetWebhookSecret(ctx context.Context, c tenant.CommunityID, id workflow.ID, hash [32]byte, replace bool) (bool, error) {
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return false, err
	}
	n, err := s.writeCountAudited(ctx, "set webhook secret", c, cseq, func(int64) audit.Record { return workflow.WebhookSecretAudit(ctx, id, replace) }, []string{
		`UPDATE workflows SET webhook_secret_hash = ?3 WHERE community = ?1 AND id = ?2 AND (?4 OR webhook_secret_hash IS NULL)`,
	}, cseq, id[:], hash[:], replace)
	if err != nil {
		return false, err
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
	cseq, err := s.wfSeq(ctx, c)
	if err != nil {
		return [32]byte{}, false, err
	}
	var b []byte
	err = s.rdb.QueryRowContext(ctx, `SELECT webhook_secret_hash FROM workflows WHERE community = ? AND id = ?`, cseq, id[:]).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return [32]byte{}, false, workflow.ErrNotFound
	}
	if err != nil {
		return [32]byte{}, false, internal("webhook secret", err)
	}
	if len(b) != 32 {
		return [32]byte{}, false, nil
	}
	return [32]byte(b), true, nil
}
