package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.MainHostStore = (*Store)(nil)

// SetMainHost implements store.MainHostStore.
func (s *Store) SetMainHost(ctx context.Context, host string) error {
	if tenant.ValidateHost(host) != nil {
		return store.ErrInvalidHost
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO deployment_settings (name, value) VALUES ('main_host', $1)
ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = now()`, host)
	if err != nil {
		return fmt.Errorf("postgres: set main host: %w", err)
	}
	return nil
}

// MainHost implements store.MainHostStore.
func (s *Store) MainHost(ctx context.Context) (string, error) {
	var host string
	err := s.pool.QueryRow(ctx, `SELECT value FROM deployment_settings WHERE name = 'main_host'`).Scan(&host)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("postgres: main host: %w", err)
	}
	return host, nil
}
