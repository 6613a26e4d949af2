package postgres

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.TokenStore = (*Store)(nil)

// CreateAPIToken implements store.TokenStore. A transaction-scoped
// advisory lock on (community, owner) serializes concurrent mints of one
// owner, so the count of active tokens and the insert are one step.
func (s *Store) CreateAPIToken(ctx context.Context, t store.APIToken) error {
	owner, ok := nostr.DecodeHex32(t.Owner)
	if !ok || t.Community.IsZero() {
		return errors.New("postgres: token owner must be 64 lowercase hex characters, in a community")
	}
	scopes, err := json.Marshal(t.Scopes)
	if err != nil {
		return fmt.Errorf("postgres: token scopes: %w", err)
	}
	created := t.CreatedAt.Truncate(time.Second)
	err = s.inCommunityTx(ctx, t.Community, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "api_tokens:"+t.Community.String()+":"+t.Owner); err != nil {
			return err
		}
		var active int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM api_tokens
WHERE community_id = $1 AND owner = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $3)`,
			t.Community.UUID(), owner, created).Scan(&active); err != nil {
			return err
		}
		if active >= store.MaxActiveTokens {
			return store.ErrTokenLimit
		}
		if _, err := tx.Exec(ctx, `INSERT INTO api_tokens
(community_id, id, hash, owner, name, scopes, created_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			t.Community.UUID(), t.ID, t.Hash[:], owner, t.Name, scopes, t.CreatedBy, created, nullTime(t.ExpiresAt)); err != nil {
			return err
		}
		return queueAudit(ctx, tx, t.Community, store.TokenAudit(ctx, t))
	})
	if errors.Is(err, store.ErrTokenLimit) {
		return err
	}
	if err != nil {
		return fmt.Errorf("postgres: create token: %w", err)
	}
	s.audit.pending(t.Community)
	return nil
}

const tokenColumns = `id, hash, owner, name, scopes, created_by, created_at, expires_at, revoked_at`

// APITokenByHash implements store.TokenStore.
func (s *Store) APITokenByHash(ctx context.Context, c tenant.CommunityID, hash [32]byte) (store.APIToken, error) {
	if c.IsZero() {
		return store.APIToken{}, store.ErrNoToken
	}
	var b pgx.Batch
	b.Queue(`SELECT `+tokenColumns+` FROM api_tokens WHERE community_id = $1 AND hash = $2`, c.UUID(), hash[:])
	var t store.APIToken
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		var err error
		t, err = scanToken(c, br.QueryRow())
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.APIToken{}, store.ErrNoToken
	case err != nil:
		return store.APIToken{}, fmt.Errorf("postgres: token by hash: %w", err)
	}
	return t, nil
}

// APITokens implements store.TokenStore.
func (s *Store) APITokens(ctx context.Context, c tenant.CommunityID) ([]store.APIToken, error) {
	if c.IsZero() {
		return nil, nil
	}
	var out []store.APIToken
	err := s.readInCommunity(ctx, c, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE community_id = $1 ORDER BY created_at DESC, id`, c.UUID())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanToken(c, rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list tokens: %w", err)
	}
	return out, nil
}

// RevokeAPIToken implements store.TokenStore.
func (s *Store) RevokeAPIToken(ctx context.Context, c tenant.CommunityID, id string, at time.Time) (store.APIToken, bool, error) {
	if c.IsZero() {
		return store.APIToken{}, false, store.ErrNoToken
	}
	at = at.Truncate(time.Second)
	var (
		t       store.APIToken
		revoked bool
	)
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		var err error
		t, err = scanToken(c, tx.QueryRow(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE community_id = $1 AND id = $2 FOR UPDATE`, c.UUID(), id))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNoToken
		}
		if err != nil || t.Revoked() {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE api_tokens SET revoked_at = $3 WHERE community_id = $1 AND id = $2`, c.UUID(), id, at); err != nil {
			return err
		}
		t.RevokedAt, revoked = at, true
		return queueAudit(ctx, tx, c, store.RevokeAudit(ctx, t, at))
	})
	if errors.Is(err, store.ErrNoToken) {
		return store.APIToken{}, false, err
	}
	if err != nil {
		return store.APIToken{}, false, fmt.Errorf("postgres: revoke token: %w", err)
	}
	if revoked {
		s.audit.pending(c)
	}
	return t, revoked, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.Truncate(time.Second)
	return &t
}

func scanToken(c tenant.CommunityID, row pgx.Row) (store.APIToken, error) {
	var (
		t                store.APIToken
		hash, owner      []byte
		scopes           []byte
		expires, revoked *time.Time
	)
	if err := row.Scan(&t.ID, &hash, &owner, &t.Name, &scopes, &t.CreatedBy, &t.CreatedAt, &expires, &revoked); err != nil {
		return t, err
	}
	if len(hash) != 32 || len(owner) != 32 {
		return t, errors.New("malformed token row")
	}
	if err := json.Unmarshal(scopes, &t.Scopes); err != nil {
		return t, fmt.Errorf("token scopes: %w", err)
	}
	t.Community = c
	copy(t.Hash[:], hash)
	t.Owner = hex.EncodeToString(owner)
	if expires != nil {
		t.ExpiresAt = *expires
	}
	if revoked != nil {
		t.RevokedAt = *revoked
	}
	return t, nil
}
