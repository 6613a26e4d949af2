package embedded

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.TokenStore = (*Store)(nil)

// CreateAPIToken implements store.TokenStore. The single writer makes the
// count of active tokens and the insert one atomic step.
func (s *Store) CreateAPIToken(ctx context.Context, t store.APIToken) error {
	owner, ok := nostr.DecodeHex32(t.Owner)
	if !ok {
		return errors.New("sqlite: token owner must be 64 lowercase hex characters")
	}
	scopes, err := json.Marshal(t.Scopes)
	if err != nil {
		return fmt.Errorf("sqlite: token scopes: %w", err)
	}
	cseq, err := s.communitySeq(ctx, t.Community)
	if err != nil {
		return err
	}
	now := t.CreatedAt.Unix()
	return s.submit(ctx, func(w *writer) error {
		var active int
		if err := w.conn.QueryRowContext(w.ctx, `SELECT count(*) FROM api_tokens
WHERE community = ? AND owner = ? AND revoked_at = 0 AND (expires_at = 0 OR expires_at > ?)`, cseq, owner, now).Scan(&active); err != nil {
			return internal("count tokens", err)
		}
		if active >= store.MaxActiveTokens {
			return store.ErrTokenLimit
		}
		if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO api_tokens
(community, id, hash, owner, name, scopes, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			cseq, t.ID, t.Hash[:], owner, t.Name, string(scopes), t.CreatedBy, now, unixOrZero(t.ExpiresAt)); err != nil {
			return internal("create token", err)
		}
		return w.appendAudit(cseq, t.Community, store.TokenAudit(ctx, t))
	})
}

const tokenColumns = `id, hash, owner, name, scopes, created_by, created_at, expires_at, revoked_at`

// APITokenByHash implements store.TokenStore.
func (s *Store) APITokenByHash(ctx context.Context, c tenant.CommunityID, hash [32]byte) (store.APIToken, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return store.APIToken{}, store.ErrNoToken
	}
	if err != nil {
		return store.APIToken{}, err
	}
	t, err := scanToken(c, s.rdb.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE community = ? AND hash = ?`, cseq, hash[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return store.APIToken{}, store.ErrNoToken
	}
	return t, err
}

// APITokens implements store.TokenStore.
func (s *Store) APITokens(ctx context.Context, c tenant.CommunityID) ([]store.APIToken, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE community = ? ORDER BY created_at DESC, id`, cseq)
	if err != nil {
		return nil, internal("list tokens", err)
	}
	defer rows.Close()
	var out []store.APIToken
	for rows.Next() {
		t, err := scanToken(c, rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("list tokens", err)
	}
	return out, nil
}

// RevokeAPIToken implements store.TokenStore.
func (s *Store) RevokeAPIToken(ctx context.Context, c tenant.CommunityID, id string, at time.Time) (store.APIToken, bool, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return store.APIToken{}, false, store.ErrNoToken
	}
	if err != nil {
		return store.APIToken{}, false, err
	}
	var (
		t       store.APIToken
		revoked bool
	)
	err = s.submit(ctx, func(w *writer) error {
		var err error
		t, err = scanToken(c, w.conn.QueryRowContext(w.ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE community = ? AND id = ?`, cseq, id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNoToken
		}
		if err != nil || t.Revoked() {
			return err
		}
		if _, err := w.conn.ExecContext(w.ctx, `UPDATE api_tokens SET revoked_at = ? WHERE community = ? AND id = ?`, at.Unix(), cseq, id); err != nil {
			return internal("revoke token", err)
		}
		t.RevokedAt, revoked = time.Unix(at.Unix(), 0), true
		return w.appendAudit(cseq, c, store.RevokeAudit(ctx, t, at))
	})
	if err != nil {
		return store.APIToken{}, false, err
	}
	return t, revoked, nil
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func unixTimeOrZero(sec int64) time.Time {
	if sec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0)
}

func scanToken(c tenant.CommunityID, row interface{ Scan(...any) error }) (store.APIToken, error) {
	var (
		t                         store.APIToken
		hash, owner               []byte
		scopes                    string
		created, expires, revoked int64
	)
	if err := row.Scan(&t.ID, &hash, &owner, &t.Name, &scopes, &t.CreatedBy, &created, &expires, &revoked); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return t, err
		}
		return t, internal("read token", err)
	}
	if len(hash) != 32 || len(owner) != 32 {
		return t, internal("read token", errors.New("malformed row"))
	}
	if err := json.Unmarshal([]byte(scopes), &t.Scopes); err != nil {
		return t, internal("read token scopes", err)
	}
	t.Community = c
	copy(t.Hash[:], hash)
	t.Owner = hex.EncodeToString(owner)
	t.CreatedAt, t.ExpiresAt, t.RevokedAt = time.Unix(created, 0), unixTimeOrZero(expires), unixTimeOrZero(revoked)
	return t, nil
}
