package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.NameStore = (*Store)(nil)

// SetName implements store.NameStore. The users_nip05_key unique index
// (community_id, lower(nip05)) makes the check and the write one step: a
// concurrent claim of the same name by another pubkey fails with a unique
// violation, reported as store.ErrNameTaken.
func (s *Store) SetName(ctx context.Context, c tenant.CommunityID, pubkey, name string) error {
	n, ok := store.NormalizeName(name)
	if !ok {
		return store.ErrInvalidName
	}
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return errors.New("postgres: name holder must be 64 lowercase hex characters")
	}
	changed := false
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO users (community_id, pubkey, nip05) VALUES ($1, $2, $3)
ON CONFLICT (community_id, pubkey) DO UPDATE SET nip05 = EXCLUDED.nip05, updated_at = now()
WHERE users.nip05 IS DISTINCT FROM EXCLUDED.nip05`, c.UUID(), pk, n)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		changed = true
		return queueAudit(ctx, tx, c, store.NameAudit(ctx, store.AuditNameSet, n, pubkey))
	})
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return store.ErrNameTaken
	case err != nil:
		return fmt.Errorf("postgres: set name: %w", err)
	}
	if changed {
		s.audit.pending(c)
	}
	return nil
}

// ReleaseName implements store.NameStore.
func (s *Store) ReleaseName(ctx context.Context, c tenant.CommunityID, name, holder string) (string, error) {
	n, ok := store.NormalizeName(name)
	if !ok || c.IsZero() {
		return "", store.ErrNoName
	}
	var only []byte // nil: any holder
	if holder != "" {
		if only, ok = nostr.DecodeHex32(holder); !ok {
			return "", store.ErrNoName
		}
	}
	var released []byte
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE users SET nip05 = NULL, updated_at = now()
WHERE community_id = $1 AND lower(nip05) = $2 AND ($3::bytea IS NULL OR pubkey = $3) RETURNING pubkey`, c.UUID(), n, only).Scan(&released)
		if err != nil {
			return err
		}
		return queueAudit(ctx, tx, c, store.NameAudit(ctx, store.AuditNameReleased, n, hex.EncodeToString(released)))
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", store.ErrNoName
	case err != nil:
		return "", fmt.Errorf("postgres: release name: %w", err)
	}
	s.audit.pending(c)
	return hex.EncodeToString(released), nil
}

// NameOwner implements store.NameStore.
func (s *Store) NameOwner(ctx context.Context, c tenant.CommunityID, name string) (string, error) {
	n, ok := store.NormalizeName(name)
	if !ok || c.IsZero() {
		return "", store.ErrNoName
	}
	var b pgx.Batch
	b.Queue(`SELECT pubkey FROM users WHERE community_id = $1 AND lower(nip05) = $2`, c.UUID(), n)
	var holder []byte
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&holder) })
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", store.ErrNoName
	case err != nil:
		return "", fmt.Errorf("postgres: name owner: %w", err)
	}
	return hex.EncodeToString(holder), nil
}

// PubKeyName implements store.NameStore.
func (s *Store) PubKeyName(ctx context.Context, c tenant.CommunityID, pubkey string) (string, error) {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok || c.IsZero() {
		return "", store.ErrNoName
	}
	var b pgx.Batch
	b.Queue(`SELECT nip05 FROM users WHERE community_id = $1 AND pubkey = $2 AND nip05 IS NOT NULL`, c.UUID(), pk)
	var name string
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&name) })
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", store.ErrNoName
	case err != nil:
		return "", fmt.Errorf("postgres: pubkey name: %w", err)
	}
	return name, nil
}
