package workflow

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"
)

type config struct {
	logger      *slog.Logger
	concurrency int
	leaseTTL    time.Duration
	heartbeat   time.Duration
	poll        time.Duration
	cacheTTL    time.Duration
	maxDelay    time.Duration
	maxAttempts int64
	worker      string
	minInterval time.Duration
	schedTick   time.Duration
	authority   Authority
	rights      OwnerRights // WithOwnerRights, else the Publisher's, else from authority
	topics      TopicSetter
	dms         DMSealer
	webhooks    WebhookCaller
	approvals   ApprovalStore  // the Store, when it implements ApprovalStore
	links       ApprovalLinker // WithApprovalLinks
	actions     []Action
	observer    RunObserver // WithRunObserver
}

func defaultConfig() config {
	host, _ := os.Hostname()
	return config{
		logger:      slog.Default(),
		concurrency: 16,
		leaseTTL:    30 * time.Second,
		poll:        time.Second,
		cacheTTL:    10 * time.Second,
		maxDelay:    7 * 24 * time.Hour,
		maxAttempts: 10,
		minInterval: MinScheduleInterval,
		schedTick:   time.Second,
		worker:      host + "-" + strconv.Itoa(os.Getpid()) + "-" + NewID().String()[:8],
		observer:    noObserver{},
	}
}

// Option configures an Engine; New validates every option.
type Option func(*config) error

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("workflow: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithConcurrency sets how many runs execute at once (default 16,
// 1–10000). Further runs wait as pending runs in the store: a full engine
// queues triggers, it never drops them.
func WithConcurrency(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 10000 {
			return fmt.Errorf("workflow: concurrency %d out of range 1-10000", n)
		}
		c.concurrency = n
		return nil
	}
}

// WithLease sets how long a claimed run stays leased without a heartbeat
// (default 30 s, at least 50 ms) and the heartbeat interval (0 = a third
// of ttl; must be shorter than ttl). A run whose worker died is taken over
// once ttl has passed since its last heartbeat.
func WithLease(ttl, heartbeat time.Duration) Option {
	return func(c *config) error {
		if ttl < 50*time.Millisecond {
			return fmt.Errorf("workflow: lease %v shorter than 50ms", ttl)
		}
		if heartbeat < 0 || heartbeat >= ttl {
			return fmt.Errorf("workflow: heartbeat %v must be positive and shorter than the lease %v", heartbeat, ttl)
		}
		c.leaseTTL, c.heartbeat = ttl, heartbeat
		return nil
	}
}

// WithPollInterval sets how often an idle engine looks for claimable runs
// (parked runs due, runs whose lease lapsed, runs created by other pods;
// default 1 s, 10 ms–1 min). Runs created on this engine start at once.
func WithPollInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < 10*time.Millisecond || d > time.Minute {
			return fmt.Errorf("workflow: poll interval %v out of range 10ms-1m", d)
		}
		c.poll = d
		return nil
	}
}

// WithCacheTTL sets how long the triggered workflows of a channel are
// cached (default 10 s, as in Buzz; 0 disables the cache). Invalidate
// drops a channel's entry at once on this engine.
func WithCacheTTL(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("workflow: negative cache TTL %v", d)
		}
		c.cacheTTL = d
		return nil
	}
}

// WithMaxDelay bounds a delay step's duration (default 7 days).
func WithMaxDelay(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second {
			return fmt.Errorf("workflow: max delay %v shorter than 1s", d)
		}
		c.maxDelay = d
		return nil
	}
}

// WithWorkerName names this engine in leases (default hostname-pid-random).
func WithWorkerName(name string) Option {
	return func(c *config) error {
		if name == "" || len(name) > 200 {
			return errors.New("workflow: worker name must be 1-200 bytes")
		}
		c.worker = name
		return nil
	}
}

// WithAuthority sets who is a channel member (required; a
// store.ChannelStore satisfies it). See WithOwnerRights for what a
// workflow's owner may do.
func WithAuthority(a Authority) Option {
	return func(c *config) error {
		if a == nil {
			return errors.New("workflow: nil authority")
		}
		c.authority = a
		return nil
	}
}

// WithOwnerRights sets the rule deciding what a workflow's owner may do
// when the workflow acts (see OwnerRights). Without it the engine uses its
// Publisher when that implements OwnerRights (the relay's, in package
// workflowhost, does), else a rule derived from the Authority alone: an active channel
// member, not a guest to post, owner or admin for RightMetadata and
// RightAdmin.
func WithOwnerRights(r OwnerRights) Option {
	return func(c *config) error {
		if r == nil {
			return errors.New("workflow: nil owner rights")
		}
		c.rights = r
		return nil
	}
}

// WithTopicSetter enables set_channel_topic.
func WithTopicSetter(t TopicSetter) Option {
	return func(c *config) error {
		if t == nil {
			return errors.New("workflow: nil topic setter")
		}
		c.topics = t
		return nil
	}
}

// WithDMSealer enables send_dm.
func WithDMSealer(s DMSealer) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("workflow: nil DM sealer")
		}
		c.dms = s
		return nil
	}
}

// WithWebhookCaller enables call_webhook.
func WithWebhookCaller(w WebhookCaller) Option {
	return func(c *config) error {
		if w == nil {
			return errors.New("workflow: nil webhook caller")
		}
		c.webhooks = w
		return nil
	}
}

// WithApprovalLinks makes request_approval send links to the approval
// page (l builds them) rather than bare tokens.
func WithApprovalLinks(l ApprovalLinker) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("workflow: WithApprovalLinks(nil)")
		}
		c.links = l
		return nil
	}
}

// WithAction registers a custom action (its name must not be a built-in's).
func WithAction(a Action) Option {
	return func(c *config) error {
		if a == nil || a.Name() == "" {
			return errors.New("workflow: action without a name")
		}
		c.actions = append(c.actions, a)
		return nil
	}
}

// WithMinScheduleInterval lowers the smallest interval a schedule trigger
// may use below MinScheduleInterval (60 s). It is for tests only: a
// production relay keeps Buzz's floor.
func WithMinScheduleInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second || d > MinScheduleInterval || d%time.Second != 0 {
			return fmt.Errorf("workflow: minimum schedule interval %s must be whole seconds between 1s and %s", d, MinScheduleInterval)
		}
		c.minInterval = d
		return nil
	}
}

// WithScheduleTick sets how often the scheduler looks for due schedules
// (default 1 s; one indexed query per tick when nothing is due).
func WithScheduleTick(d time.Duration) Option {
	return func(c *config) error {
		if d < 10*time.Millisecond || d > time.Minute {
			return fmt.Errorf("workflow: schedule tick %s must be between 10ms and 1m", d)
		}
		c.schedTick = d
		return nil
	}
}
