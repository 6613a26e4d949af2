// Package postgres is the production store.Backend: events and the community
// registry in PostgreSQL, shared safely by many relay processes.
//
// Guarantees beyond the store contract:
//   - Isolation is enforced by the schema itself. Every tenant table leads its
//     keys with community_id, and row-level security binds every statement to
//     the community set for its transaction (buzz.community_id); the store runs
//     as a role without BYPASSRLS (DefaultRLSRole), so a query that forgot its
//     community predicate still sees only that community's rows.
//   - Replacement and deletion are atomic across processes: they serialize on
//     a transaction-scoped advisory lock per (community, kind, pubkey, d).
//   - Concurrent Saves are group-committed: batched into one transaction, each
//     acknowledged (Save returns nil) only after that transaction committed.
//   - When PostgreSQL is unreachable, calls fail with errors (never hang past
//     their context) and the pool reconnects once the server is back.
//
// Migrations are embedded and applied with goose (Migrate, or WithAutoMigrate).
//
// It implements store's contracts (and workflow's and operator's stores); it
// must not import the relay (package buzz), ingest, pubsub, a Redis client or
// the other backend.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/buzzrelay/buzz/store"
)

var _ store.Backend = (*Store)(nil)

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("postgres: store is closed")

// Store is a store.Backend on PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	cfg  config
	url  string

	mu     sync.RWMutex // guards closed against Save enqueueing
	closed bool
	queue  chan *saveReq
	wg     sync.WaitGroup
	stop   chan struct{}

	audit *auditLinker // links queued audit entries into chains

	// Planner statistics (analyze.go).
	saved       atomic.Int64 // events stored since the last ANALYZE began
	analyzeAt   atomic.Int64 // saved count that starts the next one
	analyzing   atomic.Bool
	settle      atomic.Int32 // settleIdle, settleArmed or settleDirty
	settleTimer *time.Timer  // nil while the analyser is off
	settleBase  time.Time    // settleClock's origin
	settleQuiet atomic.Int64 // settleClock when saving last showed, at the latest
}

// Open connects to the database at databaseURL (a PostgreSQL URL or DSN) and
// returns a Store. The schema must be migrated (Migrate, or WithAutoMigrate).
// Open fails if the server is unreachable or an option is invalid.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if int32(cfg.committers) >= cfg.maxConns {
		return nil, fmt.Errorf("postgres: committers (%d) must be fewer than the pool size (%d)", cfg.committers, cfg.maxConns)
	}
	pcfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse database URL: %w", err)
	}
	if cfg.autoMigrate {
		if err := Migrate(ctx, databaseURL); err != nil {
			return nil, err
		}
	}
	// Statements are prepared once per connection (pgx's statement cache);
	// planning a query over every partition and index costs more than
	// running it, so plan once per statement and prune partitions at run
	// time instead of re-planning each execution.
	pcfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	if pcfg.ConnConfig.ConnectTimeout == 0 {
		// A server that drops packets must fail calls, not hang them.
		pcfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	// A query whose context ends (its client went away, its subscription
	// closed, its deadline passed) is cancelled in the server: pgx closes
	// the connection and sends PostgreSQL a cancel request on the way out
	// (PostgreSQL notices a closed socket only at its next client check,
	// checkClientConnection; the cancel request stops it at once —
	// TestRelayCancelsQueriesInDatabase).
	// pgx's CancelRequestContextWatcherHandler would keep the connection,
	// but turns the context's error into the server's 57014 error, which
	// callers testing for context.Canceled would no longer recognise.
	pcfg.MaxConns = cfg.maxConns
	pcfg.MinConns = 0
	pcfg.HealthCheckPeriod = 10 * time.Second
	setRole := ""
	if role := cfg.rlsRole; role != "" {
		setRole = "SET ROLE " + pgx.Identifier{role}.Sanitize()
	}
	pcfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if setRole != "" {
			if _, err := c.Exec(ctx, setRole); err != nil {
				return err
			}
		}
		checkClientConnection(ctx, c, cfg.logger)
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: create pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s := &Store{
		pool:  pool,
		cfg:   cfg,
		url:   databaseURL,
		queue: make(chan *saveReq, cfg.batchSize*cfg.committers),
		stop:  make(chan struct{}),
	}
	if err := s.MaintainPartitions(ctx); err != nil {
		cfg.logger.Warn("postgres: creating event partitions ahead failed; events land in the default partition until it succeeds", "err", err)
	}
	s.checkSearchIndexUsable(ctx)
	s.audit = newAuditLinker(s)
	for i := range auditLinkers {
		s.wg.Add(1)
		go s.audit.run(s.stop, i == 0)
	}
	for range cfg.committers {
		s.wg.Add(1)
		go s.committer()
	}
	s.wg.Add(1)
	go s.maintenance()
	if cfg.analyzeEvery > 0 {
		s.startAnalyzer()
	}
	s.warnIfNoAutovacuum(ctx)
	return s, nil
}

// clientCheckInterval is how often a backend of the pool, while it runs a
// statement, polls whether its client is still connected.
const clientCheckInterval = "1s"

// checkClientConnection has the connection's backend notice within
// clientCheckInterval that its client went away while it runs a
// statement (client_connection_check_interval, PostgreSQL 14 and later).
// The cancel request pgx sends when a query's context ends stops a
// statement that is running; but one sent before the backend has read the
// statement (a deadline passing while the query is still being sent, on a
// loaded machine) is ignored, and the backend then runs the statement
// with nobody to answer, waiting on a lock as long as it is held: closing
// the connection alone does not stop it, as PostgreSQL does not look at
// the socket otherwise. Where the server is older or its platform cannot
// poll for a closed socket, the connection is used without it.
func checkClientConnection(ctx context.Context, c *pgx.Conn, log *slog.Logger) {
	major, _, _ := strings.Cut(c.PgConn().ParameterStatus("server_version"), ".")
	if n, err := strconv.Atoi(strings.TrimSpace(major)); err != nil || n < 14 {
		return
	}
	if _, err := c.Exec(ctx, "SET client_connection_check_interval = '"+clientCheckInterval+"'"); err != nil {
		log.Debug("postgres: client connection checks unavailable", "err", err)
	}
}

// ReadConcurrency is how many client queries the store serves at once:
// the pool connections not reserved for its committers, less two kept free
// for the lookups that ingest and access checks make. A relay admits no
// more concurrent client queries than this, so a query waits in the
// relay's fair queue rather than in the pool, and never in front of an
// EVENT's lookups.
func (s *Store) ReadConcurrency() int { return max(1, int(s.cfg.maxConns)-s.cfg.committers-2) }

// Close stops accepting Saves, waits for queued ones to be committed (or to
// fail), and closes the pool. It is safe to call more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.queue)
	close(s.stop)
	s.mu.Unlock()
	s.wg.Wait()
	s.pool.Close()
	return nil
}

// MaintainPartitions creates the monthly event partitions from last month up
// to three months ahead, moving any early arrivals out of the default
// partition. Open calls it and the store repeats it twice a day; it needs a
// connection that may create tables, so it connects without switching to the
// RLS role.
func (s *Store) MaintainPartitions(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return fmt.Errorf("postgres: maintenance connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SELECT buzz_ensure_event_partitions(now() - interval '1 month', 3)`); err != nil {
		return fmt.Errorf("postgres: ensure partitions: %w", err)
	}
	return nil
}

// checkSearchIndexUsable warns when NIP-50 searches cannot use
// events_search_idx under row-level security: the tsvector @@ tsquery
// operator must be LEAKPROOF (migration 25 marks it when run by a superuser;
// a dump and restore does not keep the mark).
func (s *Store) checkSearchIndexUsable(ctx context.Context) {
	var leakproof bool
	err := s.pool.QueryRow(ctx, `SELECT proleakproof FROM pg_proc WHERE oid = 'ts_match_vq(tsvector, tsquery)'::regprocedure`).Scan(&leakproof)
	if err == nil && !leakproof && s.cfg.rlsRole != "" {
		s.cfg.logger.Warn("postgres: searches scan every event of the community: ts_match_vq is not LEAKPROOF, so row-level security keeps events_search_idx unused",
			"fix", "as a superuser: ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF")
	}
}

// warnIfNoAutovacuum logs a warning when the server runs without
// autovacuum: the store keeps the event tables' statistics itself
// (analyze.go), but nothing else vacuums them or analyses the other tables.
func (s *Store) warnIfNoAutovacuum(ctx context.Context) {
	var on string
	if err := s.pool.QueryRow(ctx, `SHOW autovacuum`).Scan(&on); err != nil {
		return
	}
	if on != "on" {
		s.cfg.logger.Warn("postgres: autovacuum is off; the store analyses the event tables as they grow, but dead rows are never vacuumed and other tables never analysed — turn autovacuum on")
	}
}

func (s *Store) maintenance() {
	defer s.wg.Done()
	t := time.NewTicker(12 * time.Hour)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			if err := s.MaintainPartitions(ctx); err != nil {
				s.cfg.logger.Warn("postgres: partition maintenance failed", "err", err)
			}
			cancel()
		}
	}
}
