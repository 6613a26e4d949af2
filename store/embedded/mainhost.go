package embedded

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.MainHostStore = (*Store)(nil)

// SetMainHost implements store.MainHostStore.
func (s *Store) SetMainHost(ctx context.Context, host string) error {
	if tenant.ValidateHost(host) != nil {
		return store.ErrInvalidHost
	}
	return s.submit(ctx, func(w *writer) error {
		_, err := w.conn.ExecContext(w.ctx, `INSERT INTO deployment_settings (name, value, updated_at) VALUES ('main_host', ?, ?)
ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, host, time.Now().Unix())
		if err != nil {
			return internal("set main host", err)
		}
		return nil
	})
}

// MainHost implements store.MainHostStore.
func (s *Store) MainHost(ctx context.Context) (string, error) {
	var host string
	err := s.rdb.QueryRowContext(ctx, `SELECT value FROM deployment_settings WHERE name = 'main_host'`).Scan(&host)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", internal("main host", err)
	}
	return host, nil
}
