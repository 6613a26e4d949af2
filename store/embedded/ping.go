package embedded

import (
	"context"
	"fmt"
)

// Ping reports whether the store can serve: it is open and its database
// answers a trivial read within ctx. It is meant for a readiness endpoint.
func (s *Store) Ping(ctx context.Context) error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if err := s.rdb.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	return nil
}
