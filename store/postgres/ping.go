package postgres

import (
	"context"
	"fmt"
)

// Ping reports whether the store can serve: it is open and PostgreSQL
// answers on a pooled connection within ctx. It is meant for a readiness
// endpoint.
func (s *Store) Ping(ctx context.Context) error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	return nil
}
