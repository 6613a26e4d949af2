// Package embedded is buzz's embedded default store: a durable store.Backend
// that composes two engines in one data directory, with no cgo and no
// server. The events are in an LSM engine (package store/embedded/lsm, on
// pebble) in a directory beside the database file (EventsDirSuffix);
// everything else (communities, channels, threads, moderation, workflows, audit chains, the
// text index of the events) is in a SQLite database file, through the
// pure-Go modernc.org/sqlite driver.
//
// Existing data directories are converted on first open: in an older
// layout SQLite's tables held the events, and Open moves them into the
// engine, resumably (see Open).
//
// # Durability
//
// The database runs in WAL mode: a Save returns nil only after the
// transaction holding the event is committed and the WAL is synced to stable
// storage, so an acknowledged event survives a process crash (kill -9) and a
// power loss, as with synchronous=FULL. The sync is not made inside COMMIT
// (the writer commits with synchronous=NORMAL) but by a second goroutine that
// syncs the WAL file after the commit and only then answers the batch's
// callers (see syncLoop for why that is exactly as durable): the writer
// applies the next batch while the disk syncs, and one sync covers every
// batch committed meanwhile. Copying the WAL into the database file (a
// checkpoint) and merging the text index happen in the background too, when
// writing pauses (see maintainLoop), rather than inside a commit that
// callers wait for.
//
// # One commit point
//
// An event that goes with no SQLite row (most of them) is saved in the
// engine directly, and is durable there (its log synced) before Save
// returns. A write that changes both engines — a channel command and its
// event, a deletion request and its audit entry, a thread reply and its
// thread node — commits in SQLite only: the engine's part is recorded in
// the same transaction as a redo record, applied to the engine once
// SQLite's commit is synced, and deleted once the engine's part is durable
// too; Open applies the records a crash left before the store serves. So
// after a crash such a write is in both engines or in neither, and the
// caller, unanswered, may send it again (applying it twice changes
// nothing). See redo.go.
//
// # Group commit
//
// SQLite has a single writer. Every write (Save, EnsureCommunity,
// DeleteExpired) is queued to one writer goroutine that owns the only write
// connection. It takes whatever is queued (up to a batch limit), applies it in
// one transaction, commits, and, once the commit is synced, each caller is
// answered with its own result. Per-event outcomes such as ErrDuplicate never affect the other
// events of a batch; an internal failure rolls the batch back and replays it
// one transaction per request, so one failing write cannot fail its
// neighbours.
//
// Reads (Query, Count, LookupHost) use a separate pool of read-only
// connections, which WAL lets run concurrently with the writer.
//
// Several processes may open the same file: writes are serialized by SQLite's
// own lock (BEGIN IMMEDIATE with a busy timeout), so replacement and deletion
// stay atomic across processes.
//
// # Dependencies
//
// It implements store's contracts (and workflow's and operator's stores); it
// must not import the relay (package buzz), ingest, pubsub, a Redis client or
// the other backend.
package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	// Registers the "sqlite" database/sql driver.
	_ "modernc.org/sqlite"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded/lsm"
	"github.com/buzzrelay/buzz/tenant"
)

// DefaultFileName is the database file created inside a directory passed to
// Open.
const DefaultFileName = "buzz.sqlite3"

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("sqlite: store is closed")

// Store is the embedded backend. It implements store.Backend and is safe for
// concurrent use.
type Store struct {
	path string
	cfg  config

	wdb    *sql.DB // exactly one connection, owned by the writer goroutine
	w      *writer
	rdb    *sql.DB      // read-only pool
	rstmts *stmtCache   // prepared read statements of rdb, by SQL text
	ev     *lsm.Store   // the events; nil when opened WithoutEvents
	text   *textIndexer // indexes the engine's events in events_fts; nil WithoutEvents

	mu        sync.RWMutex // guards closed and sends on reqs
	closed    bool
	reqs      chan *writeReq
	committed chan []*writeReq     // batches applied by the writer, waiting for syncLoop
	wal       *os.File             // the write-ahead log, synced by syncLoop; nil without WAL
	syncFile  func(*os.File) error // makes the write-ahead log durable: syncData
	// redoDurable is the highest redo record whose engine part syncLoop
	// has made durable; the writer deletes the records up to it.
	redoDurable atomic.Int64
	syncErr     atomic.Pointer[error] // the first failed sync of the WAL (failSync); nil while none has
	wrote       chan struct{}         // syncLoop → maintainLoop: batches are durable; closed when syncLoop exits
	reads       atomic.Uint64         // reads begun (QueryScoped, CountScoped): maintainLoop waits for them to pause
	ckdb        *sql.DB               // maintainLoop's checkpointing connection; nil when maintenance is off or there is no WAL
	done        chan struct{}         // closed when the writer, syncLoop and maintainLoop have drained and exited

	commMu sync.RWMutex
	comm   map[tenant.CommunityID]int64 // community id → communities.seq

	// restricted holds the communities (by seq) whose
	// moderation_restrictions may hold rows: loaded at open, added to by
	// the writer before it inserts a restriction (markRestricted), never
	// removed from. PubkeyRestrictions answers "none" without a query for
	// a community it does not hold, which is every community of a relay
	// that never banned anyone: the query ran for every event whose author
	// the ingest pipeline's short-lived cache did not hold.
	restrictMu sync.RWMutex
	restricted map[int64]struct{}
}

var _ store.Backend = (*Store)(nil)

type config struct {
	maxBatch    int
	queue       int
	readConns   int
	busyTimeout time.Duration
	eventCache  int64 // bytes; 0: no event cache
	readMmap    int64 // bytes of the database file each read connection maps; 0: none
	log         *slog.Logger

	maintainIdle time.Duration // 0: no background maintenance (maintainLoop)
	maintainMax  time.Duration
	mergePages   int // pages one text index merge step writes at most

	noEvents bool // WithoutEvents
}

// Option configures Open.
type Option func(*config) error

// WithMaxBatch sets how many queued writes the writer applies in one
// transaction at most (default 256).
func WithMaxBatch(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 100_000 {
			return fmt.Errorf("sqlite: WithMaxBatch(%d): want 1..100000", n)
		}
		c.maxBatch = n
		return nil
	}
}

// WithQueueSize sets how many writes may wait for the writer before Save
// blocks (default 4096).
func WithQueueSize(n int) Option {
	return func(c *config) error {
		if n < 0 || n > 1_000_000 {
			return fmt.Errorf("sqlite: WithQueueSize(%d): want 0..1000000", n)
		}
		c.queue = n
		return nil
	}
}

// WithReadConnections sets the size of the read connection pool (default 4).
func WithReadConnections(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1024 {
			return fmt.Errorf("sqlite: WithReadConnections(%d): want 1..1024", n)
		}
		c.readConns = n
		return nil
	}
}

// DefaultReadMmap is how much of the database file each read connection
// maps into memory by default (WithReadMmap): SQLite's largest.
const DefaultReadMmap = 0x7fff0000

// WithReadMmap sets how many bytes of the database file each read
// connection maps into memory (SQLite's mmap_size; default
// DefaultReadMmap, about 2 GiB, SQLite's maximum; 0 reads through the file
// only). A read connection then reads the database's pages from the
// operating system's page cache in place, without a system call and a
// copy per page: what a connection's own page cache does not hold yet — a
// COUNT or REQ touching rows no query of that connection read before —
// cost a pread each (measured: COUNT p90 9.9 → 1.6 ms and REQ p50 0.38 →
// 0.27 ms after a 20,000-event ingest). Pages committed
// since the last checkpoint are still read from the write-ahead log. The
// writer never maps. The price, as SQLite documents: an I/O error while
// reading a mapped page is a SIGBUS, which stops the process, where a read
// through the file returns an error.
func WithReadMmap(bytes int64) Option {
	return func(c *config) error {
		if bytes < 0 || bytes > DefaultReadMmap {
			return fmt.Errorf("sqlite: WithReadMmap(%d): want 0..%d", bytes, DefaultReadMmap)
		}
		c.readMmap = bytes
		return nil
	}
}

// WithBusyTimeout sets how long a connection waits for a lock held by
// another process sharing the file (default 10s).
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || d > time.Hour {
			return fmt.Errorf("sqlite: WithBusyTimeout(%v): want 0..1h", d)
		}
		c.busyTimeout = d
		return nil
	}
}

// DefaultEventCache is the default size of the event cache, in bytes
// (WithEventCache).
const DefaultEventCache = 64 << 20

// WithEventCache sets how many bytes of stored events the events engine
// keeps in memory, so the events queries return most often are read from
// memory instead of through the engine's levels (default DefaultEventCache,
// 64 MiB; 0 turns the cache off). Entries are keyed by the engine's
// sequence numbers, which are never reused, and a query finds them through
// the engine's indexes: a removed event is no longer found, so the cache
// never changes an answer.
func WithEventCache(bytes int64) Option {
	return func(c *config) error {
		if bytes < 0 || bytes > 1<<40 {
			return fmt.Errorf("sqlite: WithEventCache(%d): want 0..1 TiB", bytes)
		}
		c.eventCache = bytes
		return nil
	}
}

// Default maintenance delays (WithMaintenanceDelay).
const (
	DefaultMaintainIdle = 50 * time.Millisecond
	DefaultMaintainMax  = time.Second
)

// WithMaintenanceDelay sets when the store does its upkeep in the background
// (maintainLoop): copying its write-ahead log into the database file and
// merging its text index's segments, once nothing has been written and no
// read begun for idle, or max after the first write not yet handled,
// whichever comes first (defaults DefaultMaintainIdle and
// DefaultMaintainMax). Doing both in the background keeps that work out of
// the commits that acknowledge events; waiting for reads to pause keeps it
// out of their way, which on one core is the same processor.
// idle 0 turns background maintenance off: SQLite then checkpoints inside
// the commit that takes the log past about 32 MiB, and FTS5 merges inside
// commits (automerge).
func WithMaintenanceDelay(idle, max time.Duration) Option {
	return func(c *config) error {
		if idle < 0 || max < idle || max > time.Hour || (idle > 0 && max == 0) {
			return fmt.Errorf("sqlite: WithMaintenanceDelay(%v, %v): want 0 <= idle <= max <= 1h", idle, max)
		}
		c.maintainIdle, c.maintainMax = idle, max
		return nil
	}
}

// WithLogger sets the logger for internal failures (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("sqlite: WithLogger(nil)")
		}
		c.log = l
		return nil
	}
}

// Open opens (creating if needed) the store at path and applies any pending
// schema migrations. A store whose events are still in SQLite's tables
// (the older layout) is converted first: its events and deletion state move
// into the engine, logged at info level; the conversion needs the store to
// itself (store.ErrInUse while another process has it open, before any
// change), and one interrupted at any point is finished by the next Open.
// An Open WithoutEvents neither converts nor opens the engine.
//
// path names either a directory or a database file. If path is an existing
// directory, or does not exist and has no file extension (for example
// "./buzz-data"), it is a directory: it is created if needed (mode 0700) and
// holds the database file DefaultFileName plus SQLite's -wal and -shm files.
// Otherwise (for example "./relay.db") path is the database file itself.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	return open(ctx, path, syncData, opts...)
}

// open is Open with the function that makes the write-ahead log durable
// (syncData, but for tests that fail or hold syncs: export_test.go).
func open(ctx context.Context, path string, sync func(*os.File) error, opts ...Option) (*Store, error) {
	cfg := config{maxBatch: 256, queue: 4096, readConns: 4, busyTimeout: 10 * time.Second, eventCache: DefaultEventCache, readMmap: DefaultReadMmap, log: slog.Default(),
		maintainIdle: DefaultMaintainIdle, maintainMax: DefaultMaintainMax, mergePages: defaultMergePages}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("sqlite: nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	file, err := resolvePath(path)
	if err != nil {
		return nil, err
	}
	if err := incompleteBackup(file); err != nil {
		return nil, err
	}
	s, err := openStore(ctx, file, cfg, sync)
	if errors.Is(err, errOldLayout) {
		cfg.log.Info("sqlite: converting the data directory: moving its events from SQLite's tables into the events engine", "path", file)
		info, cerr := convertToLSM(ctx, file)
		if cerr != nil {
			return nil, fmt.Errorf("sqlite: convert %s to the events engine (interrupted, it resumes at the next Open): %w", file, cerr)
		}
		cfg.log.Info("sqlite: converted the data directory", "path", file, "events", info.Events,
			"deleted_ids", info.Tombstones, "deleted_coordinates", info.Watermarks,
			"duplicate_reactions_left_out", info.Reactions, "duration", info.Duration)
		s, err = openStore(ctx, file, cfg, sync)
	}
	if err != nil {
		return nil, err
	}
	go s.writeLoop()
	go s.syncLoop()
	go s.maintainLoop()
	return s, nil
}

// openStore opens the store in file, without starting its goroutines;
// errOldLayout when its events are still in SQLite's tables.
func openStore(ctx context.Context, file string, cfg config, sync func(*os.File) error) (*Store, error) {
	s := &Store{
		path:       file,
		cfg:        cfg,
		syncFile:   sync,
		reqs:       make(chan *writeReq, cfg.queue),
		committed:  make(chan []*writeReq, 64),
		wrote:      make(chan struct{}, 1),
		done:       make(chan struct{}),
		comm:       make(map[tenant.CommunityID]int64),
		restricted: make(map[int64]struct{}),
	}
	if err := s.open(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	return s, nil
}

func resolvePath(path string) (string, error) {
	if path == "" {
		return "", errors.New("sqlite: empty path")
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return filepath.Join(path, DefaultFileName), nil
	case err == nil:
		return path, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("sqlite: %w", err)
	case filepath.Ext(path) == "":
		if err := os.MkdirAll(path, 0o700); err != nil {
			return "", fmt.Errorf("sqlite: %w", err)
		}
		return filepath.Join(path, DefaultFileName), nil
	default:
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return "", fmt.Errorf("sqlite: %w", err)
			}
		}
		return path, nil
	}
}

// dsn builds the connection string. Pragmas are per connection, so they go
// in the DSN and apply to every connection the pool opens.
func (s *Store) dsn(readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", s.cfg.busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	if readOnly {
		q.Add("_pragma", "synchronous(FULL)") // a reader's checkpoint at close syncs
	} else {
		q.Add("_pragma", "synchronous(NORMAL)") // syncLoop syncs the WAL after each commit
	}
	q.Add("_pragma", "foreign_keys(OFF)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Add("_pragma", "cache_size(-32000)") // 32 MiB page cache per connection
	if readOnly && s.cfg.readMmap > 0 {
		q.Add("_pragma", fmt.Sprintf("mmap_size(%d)", s.cfg.readMmap)) // see WithReadMmap
	}
	if !readOnly {
		// Checkpoint every ~32 MiB of WAL instead of 4 MiB: pages rewritten
		// by many batches are copied to the database file once, which cut
		// writer CPU per event by ~15% in BenchmarkStore/InsertConcurrent64.
		q.Add("_pragma", "wal_autocheckpoint(8000)")
	}
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	u := url.URL{Scheme: "file", Opaque: s.path, RawQuery: q.Encode()}
	return u.String()
}

func (s *Store) open(ctx context.Context) error {
	var err error
	s.wdb, err = sql.Open("sqlite", s.dsn(false))
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	if err := migrate(ctx, s.wdb); err != nil {
		return err
	}
	if err := s.setAutomerge(ctx); err != nil {
		return err
	}
	if err := s.openEvents(ctx); err != nil {
		return err
	}
	if s.w, err = newWriter(ctx, s.wdb, s.ev); err != nil {
		return err
	}
	if err := s.loadRestricted(ctx); err != nil {
		return err
	}
	if err := s.openWAL(ctx); err != nil {
		return err
	}
	if err := s.openCheckpointer(ctx); err != nil {
		return err
	}
	if !s.cfg.noEvents {
		if err := s.startTextIndex(ctx); err != nil {
			return err
		}
		if err := s.replayRedo(ctx); err != nil {
			return err
		}
	}

	s.rdb, err = sql.Open("sqlite", s.dsn(true))
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	s.rdb.SetMaxOpenConns(s.cfg.readConns)
	s.rdb.SetMaxIdleConns(s.cfg.readConns)
	s.rdb.SetConnMaxIdleTime(0)
	s.rdb.SetConnMaxLifetime(0)
	if err := s.rdb.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	s.rstmts = newStmtCache(s.rdb)
	return nil
}

// openWAL opens the write-ahead log for syncLoop. Where SQLite could not
// enter WAL mode, the writer goes back to synchronous=FULL: SQLite then
// syncs inside COMMIT and syncLoop has nothing to sync.
func (s *Store) openWAL(ctx context.Context) error {
	var mode string
	if err := s.w.conn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	if mode != "wal" {
		s.cfg.log.Warn("sqlite: no write-ahead log; every commit syncs", "journal_mode", mode)
		if _, err := s.w.conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
			return fmt.Errorf("sqlite: open: %w", err)
		}
		return nil
	}
	// The writer's connection keeps the WAL file open (SQLite removes it
	// only when the last connection closes), so this is the same file for
	// the store's lifetime.
	f, err := os.OpenFile(s.path+"-wal", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("sqlite: open write-ahead log: %w", err)
	}
	s.wal = f
	return nil
}

// ReadConcurrency is how many client queries the store serves at once:
// its read connections but one, which stays free for the lookups that
// ingest and access checks make. A relay admits no more concurrent client
// queries than this, so a query waits in the relay's fair queue rather than
// for a connection, and never in front of an EVENT's lookups.
func (s *Store) ReadConcurrency() int { return max(1, s.cfg.readConns-1) }

// Close stops accepting writes, waits until every write already queued is
// committed and answered, and closes the database. It is safe to call more
// than once.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.text != nil {
		s.text.close() // before the writer stops: it writes through it
	}
	s.mu.Lock()
	close(s.reqs)
	s.mu.Unlock()
	<-s.done
	if s.syncFailed() == nil {
		// The redo records every answered write left are durable in the
		// engine: none is left for the next Open to apply.
		if err := s.w.dropRedo(s.redoDurable.Load()); err != nil {
			s.cfg.log.Error("sqlite: delete applied redo records", "err", err)
		}
	}
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	var errs []error
	if s.ckdb != nil {
		errs = append(errs, s.ckdb.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.close())
	}
	if s.wdb != nil {
		// PRAGMA optimize keeps the planner's statistics fresh; cheap at close.
		_, _ = s.wdb.Exec("PRAGMA optimize")
		errs = append(errs, s.wdb.Close())
	}
	if s.rstmts != nil {
		errs = append(errs, s.rstmts.close())
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.wal != nil {
		errs = append(errs, s.wal.Close())
	}
	if s.ev != nil { // nil WithoutEvents, or when open failed before it
		errs = append(errs, s.ev.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// internal wraps a driver failure. Callers map any error that is not one of
// the store sentinels to "error: internal server error"; the wrapped text is
// for logs only.
func internal(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}
