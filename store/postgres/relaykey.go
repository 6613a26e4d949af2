package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/buzzrelay/buzz/nostr"
)

// RelayKey returns the deployment's relay master key. When none is stored
// yet it stores candidate first; of several processes doing so at once,
// exactly one insert wins and every caller gets the same key. The key never
// leaves the database except as this return value.
func (s *Store) RelayKey(ctx context.Context, candidate nostr.SecretKey) (nostr.SecretKey, error) {
	if candidate == (nostr.SecretKey{}) {
		return nostr.SecretKey{}, errors.New("postgres: relay key: zero candidate")
	}
	var raw []byte
	err := s.pool.QueryRow(ctx, `
WITH ins AS (
    INSERT INTO deployment_keys (name, secret_key) VALUES ('relay', $1)
    ON CONFLICT (name) DO NOTHING
    RETURNING secret_key)
SELECT secret_key FROM ins
UNION ALL
SELECT secret_key FROM deployment_keys WHERE name = 'relay' AND NOT EXISTS (SELECT 1 FROM ins)
LIMIT 1`, candidate[:]).Scan(&raw)
	if err != nil {
		// A conflicting insert committed after this statement's snapshot:
		// a fresh statement sees it.
		if err2 := s.pool.QueryRow(ctx, `SELECT secret_key FROM deployment_keys WHERE name = 'relay'`).Scan(&raw); err2 != nil {
			return nostr.SecretKey{}, fmt.Errorf("postgres: relay key: %w", errors.Join(err, err2))
		}
	}
	if len(raw) != 32 {
		return nostr.SecretKey{}, errors.New("postgres: relay key: stored key has the wrong length")
	}
	sk, err := nostr.ParseSecretKey(hex.EncodeToString(raw))
	if err != nil {
		return nostr.SecretKey{}, errors.New("postgres: relay key: the stored key is not a valid secret key")
	}
	return sk, nil
}

// HasRelayKey reports whether the deployment's relay master key is stored
// (it neither reads nor stores the key).
func (s *Store) HasRelayKey(ctx context.Context) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deployment_keys WHERE name = 'relay')`).Scan(&ok); err != nil {
		return false, fmt.Errorf("postgres: relay key: %w", err)
	}
	return ok, nil
}
