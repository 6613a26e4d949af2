// Package cluster builds what the relay processes ("pods") of one
// deployment share, from one Redis connection: the broker that carries live
// events between pods, the control bus (revocations, bans, host changes,
// archives), channel presence, the shared rate limiter, the NIP-98 replay
// guard, and the archive fence that keeps an archived community refused for
// as long as any pod's host cache may still map it.
//
// Without Redis (WithRedis not given) the same Deployment is one process:
// an in-process broker and, when asked for, an in-process rate limiter;
// NIP-98 verifiers keep their in-process replay guard, sound for one process
// only.
//
//	d, err := cluster.Open(ctx, st, cluster.WithRedis(os.Getenv("REDIS_URL")))
//	...
//	defer d.Close()
//	rel, err := buzz.New(append(d.RelayOptions(), buzz.WithStore(st))...)
//
// Package cluster sits above the relay (it returns buzz.Options) and beside
// cmd/buzzd: it links the Redis client but no storage driver.
package cluster

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
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/pubsub/redis"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/ratelimit/redislimit"
	"github.com/buzzrelay/buzz/tenant"
)

// Defaults of the options.
const (
	// DefaultConnectTimeout bounds the first connection to Redis.
	DefaultConnectTimeout = 15 * time.Second
	// DefaultRateLimitWindow is the sliding window of WithEventRateLimit
	// when it is given no window.
	DefaultRateLimitWindow = 5 * time.Second
	// FenceMargin is added to the host cache's TTL to give the archive
	// fence's: a community archived on any pod stays refused on every pod
	// until no host cache can still map it.
	FenceMargin = time.Second
)

// Option configures Open. Invalid values make Open return an error.
type Option func(*config) error

type config struct {
	redisURL       string
	pod            string
	version        string
	namespace      string
	connectTimeout time.Duration
	events         int
	window         time.Duration
	hostTTL        time.Duration
	negativeTTL    time.Duration
	logger         *slog.Logger
}

// WithRedis makes the deployment span processes through the Redis server at
// rawURL (redis://, rediss:// or unix://). "" keeps it in-process.
func WithRedis(rawURL string) Option {
	return func(c *config) error {
		if rawURL == "" {
			c.redisURL = ""
			return nil
		}
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
			return errors.New("cluster: WithRedis: want a redis://, rediss:// or unix:// URL")
		}
		c.redisURL = rawURL
		return nil
	}
}

// WithPod names this process (1 to 128 printable ASCII characters, no
// spaces) in Redis CLIENT LIST, in logs and in the pod joined/left
// announcements of buzz.WithPod, with its version (at most 128 bytes).
// Default: hostname-pid, and no version.
func WithPod(name, version string) Option {
	return func(c *config) error {
		if !IsPodName(name) {
			return errors.New("cluster: WithPod: the name must be 1-128 printable ASCII characters without spaces")
		}
		if len(version) > 128 || strings.IndexFunc(version, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
			return errors.New("cluster: WithPod: the version must be at most 128 bytes without control characters")
		}
		c.pod, c.version = name, version
		return nil
	}
}

// WithNamespace prefixes every Redis key and channel (default
// redis.DefaultNamespace); the pods of one deployment share it. 1 to 64
// letters, digits, '-', '_' and '.'.
func WithNamespace(ns string) Option {
	return func(c *config) error {
		if !IsNamespace(ns) {
			return errors.New("cluster: WithNamespace: want 1-64 letters, digits, '-', '_' or '.'")
		}
		c.namespace = ns
		return nil
	}
}

// WithConnectTimeout bounds the first connection to Redis (default
// DefaultConnectTimeout; positive).
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return errors.New("cluster: WithConnectTimeout: the timeout must be positive")
		}
		c.connectTimeout = d
		return nil
	}
}

// WithEventRateLimit admits at most events EVENTs per window per community
// and author, across every pod (in Redis) or in this process (without
// Redis). events 0 means no limit (the default); window 0 means
// DefaultRateLimitWindow.
func WithEventRateLimit(events int, window time.Duration) Option {
	return func(c *config) error {
		if events < 0 || window < 0 {
			return errors.New("cluster: WithEventRateLimit: events and window must not be negative")
		}
		c.events, c.window = events, window
		return nil
	}
}

// WithHostCache sets how long a mapped (ttl) and an unmapped (negative)
// host are remembered by each pod; 0 keeps the tenant package's default.
// The archive fence lasts ttl + FenceMargin.
func WithHostCache(ttl, negative time.Duration) Option {
	return func(c *config) error {
		if ttl < 0 || negative < 0 {
			return errors.New("cluster: WithHostCache: TTLs must not be negative")
		}
		c.hostTTL, c.negativeTTL = ttl, negative
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("cluster: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// Deployment is what this process shares with the other pods of its
// deployment. Create it with Open and Close it after the relay has shut
// down.
type Deployment struct {
	broker    pubsub.Broker
	redis     *redis.Broker // nil in-process
	limiter   ratelimit.Limiter
	replay    nip98.ReplayGuard // nil in-process
	hosts     *tenant.CachingDirectory
	fence     *control.ArchiveFence
	pod       string
	version   string
	namespace string
}

// Open builds the deployment's shared parts over dir, the store's host
// directory: it caches dir per process and fences archived communities,
// and, with WithRedis, connects to Redis (bounded by WithConnectTimeout).
func Open(ctx context.Context, dir tenant.Directory, opts ...Option) (*Deployment, error) {
	cfg := config{connectTimeout: DefaultConnectTimeout, namespace: redis.DefaultNamespace, logger: slog.Default()}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("cluster: nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if dir == nil {
		return nil, errors.New("cluster: Open: nil host directory")
	}
	if cfg.pod == "" {
		cfg.pod = DefaultPodName()
	}
	d := &Deployment{pod: cfg.pod, version: cfg.version, namespace: cfg.namespace}

	var cacheOpts []tenant.CacheOption
	if cfg.hostTTL > 0 {
		cacheOpts = append(cacheOpts, tenant.WithCacheTTL(cfg.hostTTL))
	}
	if cfg.negativeTTL > 0 {
		cacheOpts = append(cacheOpts, tenant.WithNegativeCacheTTL(cfg.negativeTTL))
	}
	hosts, err := tenant.NewCachingDirectory(dir, cacheOpts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: host cache: %w", err)
	}
	ttl := tenant.DefaultCacheTTL
	if cfg.hostTTL > 0 {
		ttl = cfg.hostTTL
	}
	fence, err := control.NewArchiveFence(hosts, ttl+FenceMargin)
	if err != nil {
		return nil, fmt.Errorf("cluster: archive fence: %w", err)
	}
	d.hosts, d.fence = hosts, fence

	window := cfg.window
	if window == 0 {
		window = DefaultRateLimitWindow
	}
	tiers := ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassEvent: {Limit: cfg.events, Window: window}}}

	if cfg.redisURL == "" {
		b, err := pubsub.NewLocal(pubsub.WithLocalLogger(cfg.logger))
		if err != nil {
			return nil, fmt.Errorf("cluster: broker: %w", err)
		}
		d.broker = b
		if cfg.events > 0 {
			l, err := ratelimit.NewMemory(tiers)
			if err != nil {
				_ = b.Close()
				return nil, fmt.Errorf("cluster: rate limiter: %w", err)
			}
			d.limiter = l
		}
		return d, nil
	}

	cctx, cancel := context.WithTimeout(ctx, cfg.connectTimeout)
	defer cancel()
	b, err := redis.New(cctx, cfg.redisURL,
		redis.WithClientName(cfg.pod),
		redis.WithNamespace(cfg.namespace),
		redis.WithLogger(cfg.logger),
	)
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to Redis %s: %w", RedactURL(cfg.redisURL), err)
	}
	d.broker, d.redis = b, b
	if cfg.events > 0 {
		l, err := redislimit.New(b.Client(), tiers, redislimit.WithNamespace(cfg.namespace))
		if err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("cluster: rate limiter: %w", err)
		}
		d.limiter = l
	}
	g, err := redisreplay.New(b.Client(), redisreplay.WithNamespace(cfg.namespace))
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("cluster: NIP-98 replay guard: %w", err)
	}
	d.replay = g
	cfg.logger.Info("redis connected", "redis", RedactURL(cfg.redisURL), "pod", cfg.pod, "namespace", cfg.namespace)
	return d, nil
}

// RelayOptions configure a relay as a pod of the deployment: its broker,
// host directory behind the archive fence (and the fence's control hook),
// rate limiter when one is set, and with Redis the control bus, presence
// and the pod's announcements. Pass them to buzz.New before the relay's
// other options.
func (d *Deployment) RelayOptions() []buzz.Option {
	opts := []buzz.Option{
		buzz.WithBroker(d.broker),
		buzz.WithDirectory(d.fence),
		buzz.WithControlHook(d.fence.OnControl),
	}
	if d.limiter != nil {
		opts = append(opts, buzz.WithRateLimiter(d.limiter))
	}
	if d.redis != nil {
		opts = append(opts, buzz.WithControlBus(d.redis), buzz.WithPresence(d.redis), buzz.WithPod(d.pod, d.version))
	}
	return opts
}

// NIP98Verifier returns a NIP-98 verifier whose tokens are spent once
// across the deployment (in Redis; in this process without it), with opts
// after the deployment's replay guard.
func (d *Deployment) NIP98Verifier(opts ...nip98.Option) (*nip98.Verifier, error) {
	if d.replay != nil {
		opts = append([]nip98.Option{nip98.WithReplayGuard(d.replay)}, opts...)
	}
	return nip98.NewVerifier(opts...)
}

// Broker is the deployment's broker of live events.
func (d *Deployment) Broker() pubsub.Broker { return d.broker }

// Directory is the host directory a relay and its HTTP front ends resolve
// hosts through: the per-process cache behind the archive fence.
func (d *Deployment) Directory() *control.ArchiveFence { return d.fence }

// InvalidateHost forgets host in this process's host cache, e.g. after an
// operator changed it here (other pods learn through the control bus).
func (d *Deployment) InvalidateHost(host string) { d.fence.Invalidate(host) }

// Distributed reports whether the deployment spans processes (Redis).
func (d *Deployment) Distributed() bool { return d.redis != nil }

// Pod is this process's name in the deployment.
func (d *Deployment) Pod() string { return d.pod }

// Ping asks Redis for a PONG; in-process it returns nil at once.
func (d *Deployment) Ping(ctx context.Context) error {
	if d.redis == nil {
		return nil
	}
	c := d.redis.Client()
	return c.Do(ctx, c.B().Ping().Build()).Error()
}

// Close closes the broker (and with it the Redis connection). Close the
// relays using the deployment first.
func (d *Deployment) Close() error { return d.broker.Close() }

// DefaultPodName is hostname-pid, made printable and at most 128 bytes.
func DefaultPodName() string {
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

// IsPodName reports whether v is a valid pod name: 1 to 128 printable
// ASCII characters without spaces.
func IsPodName(v string) bool {
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

// IsNamespace reports whether v is a valid Redis namespace: 1 to 64
// letters, digits, '-', '_' and '.'.
func IsNamespace(v string) bool {
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

// RedactURL hides a Redis URL's password, for logs and errors.
func RedactURL(v string) string {
	if u, err := url.Parse(v); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}
