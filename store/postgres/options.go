package postgres

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
)

// Option configures a Store. Options are validated by Open.
type Option func(*config) error

type config struct {
	maxConns      int32
	autoMigrate   bool
	rlsRole       string
	batchSize     int
	linger        time.Duration
	committers    int
	logger        *slog.Logger
	analyzeEvery  time.Duration // 0: the store's analyser is off
	analyzeSettle time.Duration
}

func defaultConfig() config {
	return config{
		maxConns:      16,
		rlsRole:       DefaultRLSRole,
		batchSize:     256,
		linger:        0,
		committers:    4,
		analyzeEvery:  time.Minute,
		analyzeSettle: 2 * time.Second,
		logger:        slog.New(slog.DiscardHandler),
	}
}

// DefaultRLSRole is the role the migrations create (NOLOGIN NOBYPASSRLS) and
// the store switches to with SET ROLE on every pooled connection.
const DefaultRLSRole = "buzz_app"

var roleName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// WithMaxConns sets the size of the connection pool (default 16, 2..1000).
func WithMaxConns(n int) Option {
	return func(c *config) error {
		if n < 2 || n > 1000 {
			return fmt.Errorf("postgres: pool size %d out of range 2..1000", n)
		}
		c.maxConns = int32(n)
		return nil
	}
}

// WithAutoMigrate applies pending migrations during Open (default off;
// `buzzd migrate` runs Migrate explicitly).
func WithAutoMigrate(on bool) Option {
	return func(c *config) error { c.autoMigrate = on; return nil }
}

// WithRLSRole sets the role every pooled connection switches to with SET
// ROLE (default DefaultRLSRole). The role must not have BYPASSRLS. Pass ""
// when the connecting user already is such a role (the stricter setup: the
// relay then cannot leave the role at all); row-level security then still
// applies as long as that user is neither a superuser nor BYPASSRLS.
func WithRLSRole(role string) Option {
	return func(c *config) error {
		if role != "" && !roleName.MatchString(role) {
			return fmt.Errorf("postgres: invalid role name %q", role)
		}
		c.rlsRole = role
		return nil
	}
}

// WithGroupCommit sets how concurrent Saves are batched into one
// transaction: at most batchSize events per transaction (1..5000, default
// 256), and a committer waits up to linger (0..100ms, default 0) for more
// events before committing a partial batch. With linger 0 a batch holds
// whatever queued while the previous transaction committed, so a lone Save
// is never delayed.
func WithGroupCommit(batchSize int, linger time.Duration) Option {
	return func(c *config) error {
		if batchSize < 1 || batchSize > 5000 {
			return fmt.Errorf("postgres: group commit batch size %d out of range 1..5000", batchSize)
		}
		if linger < 0 || linger > 100*time.Millisecond {
			return fmt.Errorf("postgres: group commit linger %v out of range 0..100ms", linger)
		}
		c.batchSize, c.linger = batchSize, linger
		return nil
	}
}

// WithCommitters sets how many transactions may commit batches concurrently
// (default 4, 1..64; must be below the pool size).
func WithCommitters(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 64 {
			return fmt.Errorf("postgres: committers %d out of range 1..64", n)
		}
		c.committers = n
		return nil
	}
}

// WithLogger sets the logger for operational messages (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("postgres: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithAnalyzeInterval sets how often the store looks for event tables
// whose planner statistics are stale and vacuums and analyses them, so
// their statistics and visibility map are current (default a minute;
// 0 turns the store's analyser off, also at Open and after growth; else
// 1s..24h). Turn it off only when something else analyses every event
// partition — autovacuum never analyses a partitioned parent, and is off
// on some servers.
func WithAnalyzeInterval(d time.Duration) Option {
	return func(c *config) error {
		if d != 0 && (d < time.Second || d > 24*time.Hour) {
			return fmt.Errorf("postgres: analyze interval %v out of range 1s..24h (or 0 for off)", d)
		}
		c.analyzeEvery = d
		return nil
	}
}

// WithAnalyzeSettle sets how long saving must pause before the analyser
// vacuums and analyses what was stored since its last round (default 2s,
// 10ms..1h): when no event has been stored for d, and at least 1,000 were
// since the last round began, a round starts (at most d/4 late).
// Saves that never pause that long start no extra rounds.
// With the analyser off (WithAnalyzeInterval(0)) it has no effect.
func WithAnalyzeSettle(d time.Duration) Option {
	return func(c *config) error {
		if d < 10*time.Millisecond || d > time.Hour {
			return fmt.Errorf("postgres: analyze settle period %v out of range 10ms..1h", d)
		}
		c.analyzeSettle = d
		return nil
	}
}
