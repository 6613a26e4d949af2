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
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nip98/redisreplay"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/redis"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/ratelimit/redislimit"
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

const (
	defaultRateLimitWindow     = 5 * time.Second
	defaultRedisConnectTimeout = 15 * time.Second
)

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
				if !isPodName(v) {
					return errors.New("want 1-128 printable ASCII characters without spaces")
				}
				c.Cluster.PodName = v
				return nil
			}},
		{env: "BUZZ_REDIS_NAMESPACE", flag: "redis-namespace", def: redis.DefaultNamespace,
			usage: "first segment of every Redis key and channel; pods of one deployment must share it (letters, digits, - _ .)",
			apply: func(c *Config, v string) error {
				if !isNamespace(v) {
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
		{env: "BUZZ_RATE_LIMIT_WINDOW", flag: "rate-limit-window", def: fmtDuration(defaultRateLimitWindow),
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
		{env: "BUZZ_REDIS_CONNECT_TIMEOUT", flag: "redis-connect-timeout", def: fmtDuration(defaultRedisConnectTimeout),
			usage: "how long start-up waits for Redis before failing (Go duration); later outages are retried forever",
			apply: func(c *Config, v string) (err error) {
				c.Cluster.RedisConnectTimeout, err = parsePositiveDuration(v)
				return err
			}},
	}
}

func isPodName(v string) bool {
	if v == "" || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return false
		}
	}
	return true
}

func isNamespace(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.", c) >= 0) {
			return false
		}
	}
	return true
}

// podName is the configured pod name or hostname-pid.
func (c ClusterConfig) podName() string {
	if c.PodName != "" {
		return c.PodName
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "buzzd"
	}
	name := strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '-'
		}
		return r
	}, host) + "-" + strconv.Itoa(os.Getpid())
	if len(name) > 128 {
		name = name[len(name)-128:]
	}
	return name
}

// cluster is what buzzd builds from ClusterConfig.
type cluster struct {
	broker pubsub.Broker
	// relayOptions configure the relay (broker, limiter).
	relayOptions []buzz.Option
	// replayGuard is the operator API's NIP-98 replay guard: Redis when
	// REDIS_URL is set, else nil (the verifier's in-process default).
	replayGuard nip98.ReplayGuard
	// redisPing asks Redis for a PONG (nil without REDIS_URL).
	redisPing func(context.Context) error
	close     func() error
}

// openCluster connects to Redis when configured and builds the broker, the
// rate limiter and the replay guard.
func openCluster(ctx context.Context, cfg ClusterConfig, logger *slog.Logger) (*cluster, error) {
	ns := cfg.RedisNamespace
	if ns == "" {
		ns = redis.DefaultNamespace
	}
	window := cfg.RateLimitWindow
	if window == 0 {
		window = defaultRateLimitWindow
	}
	tiers := ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassEvent: {Limit: cfg.RateLimitEvents, Window: window}}}
	cl := &cluster{}

	if cfg.RedisURL == "" {
		b, err := pubsub.NewLocal(pubsub.WithLocalLogger(logger))
		if err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		cl.broker, cl.close = b, b.Close
		cl.relayOptions = append(cl.relayOptions, buzz.WithBroker(b))
		if cfg.RateLimitEvents > 0 {
			l, err := ratelimit.NewMemory(tiers)
			if err != nil {
				_ = b.Close()
				return nil, fmt.Errorf("rate limiter: %w", err)
			}
			cl.relayOptions = append(cl.relayOptions, buzz.WithRateLimiter(l))
		}
		return cl, nil
	}

	timeout := cfg.RedisConnectTimeout
	if timeout == 0 {
		timeout = defaultRedisConnectTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pod := cfg.podName()
	b, err := redis.New(cctx, cfg.RedisURL,
		redis.WithClientName(pod),
		redis.WithNamespace(ns),
		redis.WithLogger(logger),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to REDIS_URL %s: %w", redactRedisURL(cfg.RedisURL), err)
	}
	cl.broker, cl.close = b, b.Close
	cl.relayOptions = append(cl.relayOptions, buzz.WithBroker(b), buzz.WithControlBus(b), buzz.WithPresence(b), buzz.WithPod(pod, buildVersion()))
	if cfg.RateLimitEvents > 0 {
		l, err := redislimit.New(b.Client(), tiers, redislimit.WithNamespace(ns))
		if err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("rate limiter: %w", err)
		}
		cl.relayOptions = append(cl.relayOptions, buzz.WithRateLimiter(l))
	}
	g, err := redisreplay.New(b.Client(), redisreplay.WithNamespace(ns))
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("NIP-98 replay guard: %w", err)
	}
	cl.replayGuard = g
	cl.redisPing = func(ctx context.Context) error {
		c := b.Client()
		return c.Do(ctx, c.B().Ping().Build()).Error()
	}
	logger.Info("redis connected", "redis", redactRedisURL(cfg.RedisURL), "pod", pod, "namespace", ns)
	return cl, nil
}

// redactRedisURL hides a Redis URL's password, for logs and errors.
func redactRedisURL(v string) string {
	if u, err := url.Parse(v); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

// hostCache is the relay's caching host directory over backend, with the
// configured TTLs.
func (c ClusterConfig) hostCache(backend tenant.Directory) (*tenant.CachingDirectory, error) {
	var opts []tenant.CacheOption
	if c.HostCacheTTL > 0 {
		opts = append(opts, tenant.WithCacheTTL(c.HostCacheTTL))
	}
	if c.HostNegativeCacheTTL > 0 {
		opts = append(opts, tenant.WithNegativeCacheTTL(c.HostNegativeCacheTTL))
	}
	d, err := tenant.NewCachingDirectory(backend, opts...)
	if err != nil {
		return nil, fmt.Errorf("host directory (BUZZ_HOST_CACHE_TTL, BUZZ_HOST_NEGATIVE_CACHE_TTL): %w", err)
	}
	return d, nil
}

// fenceTTL is how long an archived community stays fenced: as long as the
// host cache may remember it, plus a margin.
func (c ClusterConfig) fenceTTL() time.Duration {
	if c.HostCacheTTL > 0 {
		return c.HostCacheTTL + time.Second
	}
	return tenant.DefaultCacheTTL + time.Second
}
