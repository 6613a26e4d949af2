package main

// Scale-out: with REDIS_URL set, several buzzd processes ("pods") behind a
// load balancer share one PostgreSQL and one Redis and act as one relay.
// Redis carries live events between pods (pubsub/redis), control messages,
// presence, the shared rate limiter and the operator API's NIP-98 replay
// guard. Without REDIS_URL everything is in-process.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/cluster"
	"github.com/buzzrelay/buzz/pubsub/redis"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/tenant"
)

// ClusterConfig configures Redis and the shared limits.
type ClusterConfig struct {
	// RedisURL (REDIS_URL) selects the Redis broker; "" = in-process.
	RedisURL string
	// PodName (BUZZ_POD_NAME) names this process in Redis CLIENT LIST and
	// logs; "" = hostname-pid.
	PodName string
	// RedisNamespace (BUZZ_REDIS_NAMESPACE) prefixes every Redis key and
	// channel; pods of one deployment share it.
	RedisNamespace string
	// RateLimitEvents (BUZZ_RATE_LIMIT_EVENTS) EVENTs admitted per
	// RateLimitWindow per community and author; 0 = no limit.
	RateLimitEvents int
	// RateLimitWindow (BUZZ_RATE_LIMIT_WINDOW) is the sliding window.
	RateLimitWindow time.Duration
	// RedisConnectTimeout (BUZZ_REDIS_CONNECT_TIMEOUT) bounds the first
	// connection at start.
	RedisConnectTimeout time.Duration
	// HostCacheTTL (BUZZ_HOST_CACHE_TTL) and HostNegativeCacheTTL
	// (BUZZ_HOST_NEGATIVE_CACHE_TTL) are how long a mapped and an unmapped
	// host are remembered; 0 = the tenant package's defaults.
	HostCacheTTL, HostNegativeCacheTTL time.Duration
}

// clusterSettings are the scale-out configuration keys.
func clusterSettings() []setting {
	return []setting{
		{env: "REDIS_URL", flag: "redis-url", def: "(unset)", secret: true,
			usage: "Redis URL (redis://, rediss:// or unix://); set = pods share live events, control messages, presence, rate limits and the NIP-98 replay guard through it; unset = all in-process (one pod)",
			apply: func(c *Config, v string) error {
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
					return errors.New("want a redis://, rediss:// or unix:// URL")
				}
				c.Cluster.RedisURL = v
				return nil
			}},
		{env: "BUZZ_POD_NAME", flag: "pod-name", def: "hostname-pid",
			usage: "name of this process in Redis CLIENT LIST and logs (1-128 printable characters, no spaces)",
			apply: func(c *Config, v string) error {
				if !cluster.IsPodName(v) {
					return errors.New("want 1-128 printable ASCII characters without spaces")
				}
				c.Cluster.PodName = v
				return nil
			}},
		{env: "BUZZ_REDIS_NAMESPACE", flag: "redis-namespace", def: redis.DefaultNamespace,
			usage: "first segment of every Redis key and channel; pods of one deployment must share it (letters, digits, - _ .)",
			apply: func(c *Config, v string) error {
				if !cluster.IsNamespace(v) {
					return errors.New("want 1-64 letters, digits, '-', '_' or '.'")
				}
				c.Cluster.RedisNamespace = v
				return nil
			}},
		{env: "BUZZ_RATE_LIMIT_EVENTS", flag: "rate-limit-events", def: "0",
			usage: "EVENTs (stored or ephemeral) one pubkey may send per community per BUZZ_RATE_LIMIT_WINDOW, counted across all pods when REDIS_URL is set; over it OK false \"rate-limited: …\"; 0 = no limit (reference: 50 per 5s)",
			apply: func(c *Config, v string) error {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || n < 0 || n > 1_000_000 {
					return errors.New("want an integer from 0 to 1000000")
				}
				c.Cluster.RateLimitEvents = n
				return nil
			}},
		{env: "BUZZ_RATE_LIMIT_WINDOW", flag: "rate-limit-window", def: fmtDuration(cluster.DefaultRateLimitWindow),
			usage: "sliding window of BUZZ_RATE_LIMIT_EVENTS (Go duration, 1ms-24h)",
			apply: func(c *Config, v string) error {
				d, err := parsePositiveDuration(v)
				if err != nil {
					return err
				}
				if d < time.Millisecond || d > ratelimit.MaxWindow {
					return errors.New("want a duration from 1ms to 24h")
				}
				c.Cluster.RateLimitWindow = d
				return nil
			}},
		{env: "BUZZ_HOST_CACHE_TTL", flag: "host-cache-ttl", def: fmtDuration(tenant.DefaultCacheTTL),
			usage: "how long a pod remembers which community a host maps to (Go duration, up to 1h); provisioning, archiving and unarchiving through the operator API or buzzd admin reach every pod at once regardless, so this only bounds changes made behind buzzd's back",
			apply: func(c *Config, v string) (err error) {
				d, err := parsePositiveDuration(v)
				if err == nil && d > time.Hour {
					err = errors.New("want at most 1h")
				}
				c.Cluster.HostCacheTTL = d
				return err
			}},
		{env: "BUZZ_HOST_NEGATIVE_CACHE_TTL", flag: "host-negative-cache-ttl", def: fmtDuration(tenant.DefaultNegativeCacheTTL),
			usage: "how long a pod remembers that a host maps to no community (Go duration, up to 1m and BUZZ_HOST_CACHE_TTL)",
			apply: func(c *Config, v string) (err error) {
				d, err := parsePositiveDuration(v)
				if err == nil && d > time.Minute {
					err = errors.New("want at most 1m")
				}
				c.Cluster.HostNegativeCacheTTL = d
				return err
			}},
		{env: "BUZZ_REDIS_CONNECT_TIMEOUT", flag: "redis-connect-timeout", def: fmtDuration(cluster.DefaultConnectTimeout),
			usage: "how long start-up waits for Redis before failing (Go duration); later outages are retried forever",
			apply: func(c *Config, v string) (err error) {
				c.Cluster.RedisConnectTimeout, err = parsePositiveDuration(v)
				return err
			}},
	}
}

// openDeployment builds what this pod shares with the others of its
// deployment (package cluster) over the store's host directory: Redis when
// REDIS_URL is set, in-process parts otherwise.
func openDeployment(ctx context.Context, cfg ClusterConfig, dir tenant.Directory, logger *slog.Logger) (*cluster.Deployment, error) {
	opts := []cluster.Option{
		cluster.WithRedis(cfg.RedisURL),
		cluster.WithEventRateLimit(cfg.RateLimitEvents, cfg.RateLimitWindow),
		cluster.WithHostCache(cfg.HostCacheTTL, cfg.HostNegativeCacheTTL),
		cluster.WithLogger(logger),
	}
	pod := cfg.PodName
	if pod == "" {
		pod = cluster.DefaultPodName()
	}
	opts = append(opts, cluster.WithPod(pod, buildVersion()))
	if cfg.RedisNamespace != "" {
		opts = append(opts, cluster.WithNamespace(cfg.RedisNamespace))
	}
	if cfg.RedisConnectTimeout > 0 {
		opts = append(opts, cluster.WithConnectTimeout(cfg.RedisConnectTimeout))
	}
	d, err := cluster.Open(ctx, dir, opts...)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL, BUZZ_HOST_CACHE_TTL, BUZZ_RATE_LIMIT_*: %w", err)
	}
	return d, nil
}
