package embedded

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.NameStore = (*Store)(nil)

// SetName implements store.NameStore.
func (s *Store) SetName(ctx context.Context, c tenant.CommunityID, pubkey, name string) error {
	n, ok := store.NormalizeName(name)
	if !ok {
		return store.ErrInvalidName
	}
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return errors.New("sqlite: name holder must be 64 lowercase hex characters")
	}
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	// The single writer serializes the check with the write.
	return s.submit(ctx, func(w *writer) error {
		var holder []byte
		err := w.conn.QueryRowContext(w.ctx, `SELECT pubkey FROM users WHERE community = ? AND lower(nip05) = ?`, cseq, n).Scan(&holder)
		switch {
		case err == nil && string(holder) != string(pk):
			return store.ErrNameTaken
		case err == nil:
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return internal("name holder", err)
		}
		if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO users (community, pubkey, nip05, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (community, pubkey) DO UPDATE SET nip05 = excluded.nip05, updated_at = excluded.updated_at`,
			cseq, pk, n, time.Now().Unix()); err != nil {
			if strings.Contains(err.Error(), "UNIQUE") {
				return store.ErrNameTaken
			}
			return internal("set name", err)
		}
		return w.appendAudit(cseq, c, store.NameAudit(ctx, store.AuditNameSet, n, pubkey))
	})
}

// ReleaseName implements store.NameStore.
func (s *Store) ReleaseName(ctx context.Context, c tenant.CommunityID, name, holder string) (string, error) {
	n, ok := store.NormalizeName(name)
	if !ok {
		return "", store.ErrNoName
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return "", store.ErrNoName
	}
	if err != nil {
		return "", err
	}
	var only []byte // nil: any holder
	if holder != "" {
		if only, ok = nostr.DecodeHex32(holder); !ok {
			return "", store.ErrNoName
		}
	}
	var released []byte
	err = s.submit(ctx, func(w *writer) error {
		err := w.conn.QueryRowContext(w.ctx, `UPDATE users SET nip05 = NULL, updated_at = ?
			WHERE community = ? AND lower(nip05) = ? AND (?4 IS NULL OR pubkey = ?4) RETURNING pubkey`,
			time.Now().Unix(), cseq, n, only).Scan(&released)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrNoName
		case err != nil:
			return internal("release name", err)
		}
		return w.appendAudit(cseq, c, store.NameAudit(ctx, store.AuditNameReleased, n, hex.EncodeToString(released)))
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(released), nil
}

// NameOwner implements store.NameStore.
func (s *Store) NameOwner(ctx context.Context, c tenant.CommunityID, name string) (string, error) {
	n, ok := store.NormalizeName(name)
	if !ok {
		return "", store.ErrNoName
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return "", store.ErrNoName
	}
	if err != nil {
		return "", err
	}
	var holder []byte
	err = s.rdb.QueryRowContext(ctx, `SELECT pubkey FROM users WHERE community = ? AND lower(nip05) = ?`, cseq, n).Scan(&holder)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", store.ErrNoName
	case err != nil:
		return "", internal("name owner", err)
	}
	return hex.EncodeToString(holder), nil
}

// PubKeyName implements store.NameStore.
func (s *Store) PubKeyName(ctx context.Context, c tenant.CommunityID, pubkey string) (string, error) {
	pk, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return "", store.ErrNoName
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return "", store.ErrNoName
	}
	if err != nil {
		return "", err
	}
	var name sql.NullString
	err = s.rdb.QueryRowContext(ctx, `SELECT nip05 FROM users WHERE community = ? AND pubkey = ?`, cseq, pk).Scan(&name)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err == nil && !name.Valid):
		return "", store.ErrNoName
	case err != nil:
		return "", internal("pubkey name", err)
	}
	return name.String, nil
}
