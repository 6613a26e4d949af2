package redis

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/pubsub"
)

// Defaults for the Options.
const (
	DefaultNamespace          = "buzz"
	DefaultEchoCacheSize      = 1 << 17 // marks; ~2 minutes of 1,000 events/s on unretained topics
	DefaultEchoTTL            = 60 * time.Second
	DefaultUnsubscribeDelay   = 500 * time.Millisecond
	DefaultReconnectMin       = 250 * time.Millisecond
	DefaultReconnectMax       = 10 * time.Second
	DefaultPublishTimeout     = time.Second
	DefaultSubscribeWait      = 2 * time.Second
	DefaultPresenceTTL        = 180 * time.Second
	DefaultClientName         = "buzzd"
	maxNamespaceLen           = 64
	maxEchoCacheSize          = 1 << 26
	maxUnsubscribeDelay       = time.Minute
	maxReconnectBackoff       = 10 * time.Minute
	minEchoTTL                = time.Second
	maxEchoTTL                = time.Hour
	defaultSubscribeBatchSize = 512
)

type config struct {
	namespace        string
	echoSize         int
	echoTTL          time.Duration
	unsubscribeDelay time.Duration
	reconnectMin     time.Duration
	reconnectMax     time.Duration
	publishTimeout   time.Duration
	subscribeWait    time.Duration
	clientName       string
	logger           *slog.Logger
	topicOf          func(pubsub.Message) pubsub.Topic
	// afterFunc schedules the debounced unsubscribe (time.AfterFunc;
	// tests fire it by hand, see withAfterFunc).
	afterFunc func(time.Duration, func()) stopper
}

// stopper is a scheduled call that can be cancelled: a *time.Timer.
type stopper interface{ Stop() bool }

func defaultConfig() config {
	return config{
		namespace:        DefaultNamespace,
		echoSize:         DefaultEchoCacheSize,
		echoTTL:          DefaultEchoTTL,
		unsubscribeDelay: DefaultUnsubscribeDelay,
		reconnectMin:     DefaultReconnectMin,
		reconnectMax:     DefaultReconnectMax,
		publishTimeout:   DefaultPublishTimeout,
		subscribeWait:    DefaultSubscribeWait,
		clientName:       DefaultClientName,
		logger:           slog.Default(),
		topicOf:          CommunityTopic,
		afterFunc:        func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) },
	}
}

// Option configures a Broker. Invalid values make New return an error.
type Option func(*config) error

// WithNamespace sets the first segment of every Redis key and channel
// (default "buzz"): "{namespace}:{community}:…". Pods that must see each
// other use the same namespace; tests use a random one. It is 1–64 bytes of
// letters, digits, '-', '_' and '.'.
func WithNamespace(ns string) Option {
	return func(c *config) error {
		if err := validateNamespace(ns); err != nil {
			return err
		}
		c.namespace = ns
		return nil
	}
}

func validateNamespace(ns string) error {
	if ns == "" || len(ns) > maxNamespaceLen {
		return fmt.Errorf("pubsub/redis: namespace must be 1-%d bytes", maxNamespaceLen)
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.", c) >= 0) {
			return errors.New("pubsub/redis: namespace may hold only letters, digits, '-', '_' and '.'")
		}
	}
	return nil
}

// WithEchoCache sets the bound (number of marks, 1..2^26) and the TTL
// (1 s..1 h) of the local-echo cache. Defaults: 131,072 marks, 60 s.
func WithEchoCache(size int, ttl time.Duration) Option {
	return func(c *config) error {
		if size < 1 || size > maxEchoCacheSize {
			return fmt.Errorf("pubsub/redis: echo cache size must be 1-%d", maxEchoCacheSize)
		}
		if ttl < minEchoTTL || ttl > maxEchoTTL {
			return fmt.Errorf("pubsub/redis: echo cache TTL must be %v-%v", minEchoTTL, maxEchoTTL)
		}
		c.echoSize, c.echoTTL = size, ttl
		return nil
	}
}

// WithUnsubscribeDelay sets how long a topic stays subscribed after its last
// Release (default 500 ms), so subscription churn does not thrash Redis.
// Zero unsubscribes at once; at most one minute.
func WithUnsubscribeDelay(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || d > maxUnsubscribeDelay {
			return fmt.Errorf("pubsub/redis: unsubscribe delay must be 0-%v", maxUnsubscribeDelay)
		}
		c.unsubscribeDelay = d
		return nil
	}
}

// withAfterFunc replaces time.AfterFunc for the debounced unsubscribe
// (WithUnsubscribeDelay): a test schedules the calls on its own clock and
// runs them when it chooses.
func withAfterFunc(f func(time.Duration, func()) stopper) Option {
	return func(c *config) error {
		if f == nil {
			return errors.New("pubsub/redis: nil afterFunc")
		}
		c.afterFunc = f
		return nil
	}
}

// WithReconnectBackoff sets the exponential backoff between reconnection
// attempts after Redis is lost (default 250 ms doubling to 10 s).
func WithReconnectBackoff(min, max time.Duration) Option {
	return func(c *config) error {
		if min <= 0 || max < min || max > maxReconnectBackoff {
			return fmt.Errorf("pubsub/redis: reconnect backoff needs 0 < min <= max <= %v", maxReconnectBackoff)
		}
		c.reconnectMin, c.reconnectMax = min, max
		return nil
	}
}

// WithPublishTimeout bounds each PUBLISH (default 1 s).
func WithPublishTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 || d > time.Minute {
			return errors.New("pubsub/redis: publish timeout must be in (0, 1m]")
		}
		c.publishTimeout = d
		return nil
	}
}

// WithSubscribeWait bounds how long Retain waits for Redis to confirm a new
// subscription (default 2 s). Zero makes Retain never wait.
func WithSubscribeWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || d > time.Minute {
			return errors.New("pubsub/redis: subscribe wait must be in [0, 1m]")
		}
		c.subscribeWait = d
		return nil
	}
}

// WithClientName sets the CLIENT SETNAME of every connection (default
// "buzzd"), so operators can find a pod's connections in CLIENT LIST.
func WithClientName(name string) Option {
	return func(c *config) error {
		if name == "" || len(name) > 128 {
			return errors.New("pubsub/redis: client name must be 1-128 bytes")
		}
		for i := 0; i < len(name); i++ {
			if name[i] <= ' ' || name[i] > '~' {
				return errors.New("pubsub/redis: client name may not hold spaces or non-printable bytes")
			}
		}
		c.clientName = name
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("pubsub/redis: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithTopicFunc sets the router that picks the topic a published message
// travels on (default CommunityTopic). It must return a topic of the
// message's own community, and pods must retain the topics it picks for
// every subscription that can match the message; HTagTopic routes channel
// events to per-channel topics.
func WithTopicFunc(f func(pubsub.Message) pubsub.Topic) Option {
	return func(c *config) error {
		if f == nil {
			return errors.New("pubsub/redis: nil topic func")
		}
		c.topicOf = f
		return nil
	}
}
