package nip98

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// DefaultRedisTimeout bounds one Mark against Redis unless WithTimeout says
// otherwise.
const DefaultRedisTimeout = 2 * time.Second

// RedisGuard is a ReplayGuard shared by every process using the same Redis
// and namespace, so a replay is caught whichever pod it reaches. Each Mark
// is one atomic
//
//	SET {ns}:{scope}:nip98:{event_id} 1 NX EX {ttl}
//
// where scope is the community's UUID or "operator-management" and ttl is
// clamped to [MinReplayTTL, MaxReplayTTL] in whole seconds. A refused NX is
// ErrReplayed; any Redis error (unreachable, timeout, closed client) is an
// error wrapping ErrReplayUnavailable: the request is refused, never let
// through unguarded.
type RedisGuard struct {
	client  rueidis.Client
	ns      string
	timeout time.Duration
}

// RedisOption configures a RedisGuard.
type RedisOption func(*RedisGuard) error

// WithNamespace sets the key namespace (default "buzz"); it should match the
// broker's and the rate limiter's so that a community's keys sit together.
func WithNamespace(ns string) RedisOption {
	return func(g *RedisGuard) error {
		if ns == "" || len(ns) > 64 {
			return errors.New("nip98: namespace must be 1-64 bytes")
		}
		for i := 0; i < len(ns); i++ {
			c := ns[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return errors.New("nip98: namespace may hold only letters, digits, '-', '_' and '.'")
			}
		}
		g.ns = ns
		return nil
	}
}

// WithTimeout bounds each Mark (default DefaultRedisTimeout); the caller's
// context may end it sooner.
func WithTimeout(d time.Duration) RedisOption {
	return func(g *RedisGuard) error {
		if d <= 0 {
			return fmt.Errorf("nip98: redis timeout must be positive, got %v", d)
		}
		g.timeout = d
		return nil
	}
}

// NewRedisGuard returns a guard over client (typically the pub/sub broker's,
// see redis.Broker.Client). The client stays owned by the caller.
func NewRedisGuard(client rueidis.Client, opts ...RedisOption) (*RedisGuard, error) {
	if client == nil {
		return nil, errors.New("nip98: nil redis client")
	}
	g := &RedisGuard{client: client, ns: "buzz", timeout: DefaultRedisTimeout}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("nip98: nil option")
		}
		if err := o(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Key returns the Redis key Mark sets for eventID in scope.
func (g *RedisGuard) Key(scope ReplayScope, eventID string) string {
	return g.ns + ":" + scope.String() + ":nip98:" + eventID
}

// Mark implements ReplayGuard.
func (g *RedisGuard) Mark(ctx context.Context, scope ReplayScope, eventID string, ttl time.Duration) error {
	if err := checkMark(scope, eventID); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	secs := int64(clampTTL(ttl) / time.Second)
	cmd := g.client.B().Set().Key(g.Key(scope, eventID)).Value("1").Nx().ExSeconds(secs).Build()
	err := g.client.Do(ctx, cmd).Error()
	switch {
	case err == nil:
		return nil
	case rueidis.IsRedisNil(err):
		return ErrReplayed
	default:
		return fmt.Errorf("%w: %w", ErrReplayUnavailable, err)
	}
}
