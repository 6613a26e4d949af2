// Package redislimit is a sliding-window ratelimit.Limiter shared by every
// relay process ("pod") using the same Redis and namespace, so a pubkey's
// usage on one pod counts on all of them.
//
// It lives apart from package ratelimit so that a single-process embedder,
// using ratelimit.Memory, does not link the Redis client. It depends on
// ratelimit and the Redis client only; it must not import the relay
// (package buzz), a store or a broker.
package redislimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/ratelimit"
)

// slidingWindow atomically trims a sorted set of admission times (µs, Redis
// server clock, so pods with skewed clocks agree) to the window, then admits
// and records the action if fewer than the limit remain. It returns
// {allowed, remaining, retry_after_µs}.
//
// KEYS[1] the window's key; ARGV window µs, limit, unique member.
var slidingWindow = rueidis.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.floor(window / 1000) + 1)
  return {1, limit - n - 1, 0}
end
local e = redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')
local retry = window
if e[2] then retry = tonumber(e[2]) + window - now end
return {0, 0, math.floor(retry)}
`)

// Limiter is a sliding-window ratelimit.Limiter over Redis. Each decision is
// one atomic Lua script over a sorted set at
// {ns}:{community}:ratelimit:{pubkey}:{class}, timed by the Redis clock.
type Limiter struct {
	client rueidis.Client
	tiers  ratelimit.Tiers
	ns     string
	prefix string // unique per limiter, for sorted-set members
	seq    atomic.Uint64
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// Option configures a Limiter.
type Option func(*Limiter) error

// WithNamespace sets the key namespace (default "buzz"); it must match the
// broker's so that operators find all of a community's keys together.
func WithNamespace(ns string) Option {
	return func(r *Limiter) error {
		if ns == "" || len(ns) > 64 {
			return errors.New("ratelimit/redislimit: namespace must be 1-64 bytes")
		}
		for i := 0; i < len(ns); i++ {
			c := ns[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return errors.New("ratelimit/redislimit: namespace may hold only letters, digits, '-', '_' and '.'")
			}
		}
		r.ns = ns
		return nil
	}
}

// New returns a limiter over client (typically the broker's, shared)
// applying tiers. The client stays owned by the caller.
func New(client rueidis.Client, tiers ratelimit.Tiers, opts ...Option) (*Limiter, error) {
	if client == nil {
		return nil, errors.New("ratelimit/redislimit: nil redis client")
	}
	if err := tiers.Validate(); err != nil {
		return nil, err
	}
	var p [8]byte
	_, _ = rand.Read(p[:])
	r := &Limiter{client: client, tiers: tiers, ns: "buzz", prefix: hex.EncodeToString(p[:]) + ":"}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("ratelimit/redislimit: nil option")
		}
		if err := o(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Allow admits and records the action when fewer than the rule's limit were
// admitted, by any pod, in the window ending now. When Redis cannot be asked
// it returns an error wrapping ratelimit.ErrUnavailable; the caller must
// refuse.
func (r *Limiter) Allow(ctx context.Context, k ratelimit.Key) (ratelimit.Decision, error) {
	if err := k.Validate(); err != nil {
		return ratelimit.Decision{}, err
	}
	rule, err := r.tiers.Rule(k)
	if err != nil {
		return ratelimit.Decision{}, err
	}
	key := r.ns + ":" + k.Community.String() + ":ratelimit:" + k.PubKey + ":" + string(k.Class)
	member := r.prefix + strconv.FormatUint(r.seq.Add(1), 36)
	args := []string{
		strconv.FormatInt(rule.Window.Microseconds(), 10),
		strconv.Itoa(rule.Limit),
		member,
	}
	res, err := slidingWindow.Exec(ctx, r.client, []string{key}, args).AsIntSlice()
	if err != nil {
		return ratelimit.Decision{}, fmt.Errorf("%w: %v", ratelimit.ErrUnavailable, err)
	}
	if len(res) != 3 {
		return ratelimit.Decision{}, fmt.Errorf("%w: unexpected script reply", ratelimit.ErrUnavailable)
	}
	d := ratelimit.Decision{Allowed: res[0] == 1, Limit: rule.Limit, Remaining: int(res[1])}
	if !d.Allowed {
		d.RetryAfter = max(time.Duration(res[2])*time.Microsecond, time.Millisecond)
	}
	return d, nil
}
