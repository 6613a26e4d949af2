// Package redisreplay is a NIP-98 replay guard (nip98.ReplayGuard) shared by
// every relay process ("pod") using the same Redis and namespace, so a
// replayed request is caught whichever pod it reaches.
//
// It lives apart from package nip98 so that a single-process embedder, whose
// verifier uses the in-process nip98.MemoryGuard, does not link the Redis
// client. It depends on nip98 and the Redis client only; it must not import
// the relay (package buzz), a store or a broker.
package redisreplay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/nip98"
)

// DefaultTimeout bounds one Mark against Redis unless WithTimeout says
// otherwise.
const DefaultTimeout = 2 * time.Second

// Guard is a nip98.ReplayGuard over Redis. Each Mark is one atomic
//
//	SET {ns}:{scope}:nip98:{event_id} 1 NX EX {ttl}
//
// where scope is the community's UUID or "operator-management" and ttl is
// nip98.ClampReplayTTL's, in whole seconds. A refused NX is
// nip98.ErrReplayed; any Redis error (unreachable, timeout, closed client)
// is an error wrapping nip98.ErrReplayUnavailable: the request is refused,
// never let through unguarded.
type Guard struct {
	client  rueidis.Client
	ns      string
	timeout time.Duration
}

var _ nip98.ReplayGuard = (*Guard)(nil)

// Option configures a Guard.
type Option func(*Guard) error

// WithNamespace sets the key namespace (default "buzz"); it should match the
// broker's and the rate limiter's so that a community's keys sit together.
func WithNamespace(ns string) Option {
	return func(g *Guard) error {
		if ns == "" || len(ns) > 64 {
			return errors.New("nip98/redisreplay: namespace must be 1-64 bytes")
		}
		for i := 0; i < len(ns); i++ {
			c := ns[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return errors.New("nip98/redisreplay: namespace may hold only letters, digits, '-', '_' and '.'")
			}
		}
		g.ns = ns
		return nil
	}
}

// WithTimeout bounds each Mark (default DefaultTimeout); the caller's
// context may end it sooner.
func WithTimeout(d time.Duration) Option {
	return func(g *Guard) error {
		if d <= 0 {
			return fmt.Errorf("nip98/redisreplay: timeout must be positive, got %v", d)
		}
		g.timeout = d
		return nil
	}
}

// New returns a guard over client (typically the pub/sub broker's, see
// redis.Broker.Client). The client stays owned by the caller.
func New(client rueidis.Client, opts ...Option) (*Guard, error) {
	if client == nil {
		return nil, errors.New("nip98/redisreplay: nil redis client")
	}
	g := &Guard{client: client, ns: "buzz", timeout: DefaultTimeout}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("nip98/redisreplay: nil option")
		}
		if err := o(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Key returns the Redis key Mark sets for eventID in scope.
func (g *Guard) Key(scope nip98.ReplayScope, eventID string) string {
	return g.ns + ":" + scope.String() + ":nip98:" + eventID
}

// Mark implements nip98.ReplayGuard.
func (g *Guard) Mark(ctx context.Context, scope nip98.ReplayScope, eventID string, ttl time.Duration) error {
	if err := nip98.ValidateMark(scope, eventID); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	secs := int64(nip98.ClampReplayTTL(ttl) / time.Second)
	cmd := g.client.B().Set().Key(g.Key(scope, eventID)).Value("1").Nx().ExSeconds(secs).Build()
	err := g.client.Do(ctx, cmd).Error()
	switch {
	case err == nil:
		return nil
	case rueidis.IsRedisNil(err):
		return nip98.ErrReplayed
	default:
		return fmt.Errorf("%w: %w", nip98.ErrReplayUnavailable, err)
	}
}
