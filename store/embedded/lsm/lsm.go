// Package lsm is an embedded event store on pebble, CockroachDB's
// log-structured merge-tree engine, with buzz's indexes as ordered keys.
//
// It implements store.Backend (events and the community registry) with the
// semantics of the conformance suite in store/storetest, which it passes
// unchanged. Where the embedded store (store/embedded) updates a B-tree leaf per
// index and per event inside each commit, pebble appends a batch of writes to
// its log once and sorts them into tables in the background, so a save costs
// a fraction of the CPU (docs/benchmarks.md, "The embedded store's event
// engine").
//
// Every Save is durable before it returns: the event's writes are applied,
// then the store waits for a synced write-ahead log covering them. Concurrent
// Saves share syncs. Decisions that write nothing (duplicate, superseded,
// deleted, a reaction whose slot is held) also wait for the sync of the
// state they were decided on. A
// failed log write or sync stops the process (pebble's policy: after a
// failed fsync nothing later proves what reached the disk).
//
// It keeps one stored reaction per (author, target, emoji) of a community,
// the slot written and freed in the batch of the reaction holding it
// (reactions.go), and refuses a second with store.ErrReactionHeld.
//
// It keeps no text index: a NIP-50 search walks the candidates its other
// conditions select (or the community's timeline) and matches and scores
// each with package search. A store embedding it indexes the text itself
// (Texts, SearchCandidates): one key per word made the engine's write path
// a third more expensive, where SQLite's FTS5 indexes a large batch for a
// few microseconds an event.
//
// On its own it is a store.Backend with its own community registry. The
// embedded store (store/embedded) composes it with SQLite: the engine holds
// the events, SQLite everything else; then the registry is SQLite's
// (WithExternalRegistry) and channel commands write through a Tx together
// with SQLite's tables.
package lsm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Store is the pebble-backed event store. It is safe for concurrent use.
type Store struct {
	db    *pebble.DB
	log   *slog.Logger
	cache *recordCache

	// life counts the operations using db; Close waits for them. pebble
	// panics on a closed database, a closed Store returns ErrClosed.
	life lifetime

	// mu serializes the writes of events: each reads what it decides on
	// and applies its writes while holding it, so every decision sees
	// every earlier write.
	mu      sync.Mutex
	lastSeq uint64 // the highest event seq used (under mu)
	// visible is the highest seq of a committed event: commits happen
	// under mu in seq order, so every live event has a seq at or below it.
	visible  atomic.Uint64
	onRemove func(seqs []uint64) // WithOnRemove
	// ids, tombs and slots filter the duplicate, tombstone and reaction
	// slot checks of a save (keyFilter; under mu).
	ids, tombs, slots *keyFilter

	// regMu serializes the registry's writes.
	regMu    sync.Mutex
	lastCseq uint32 // the highest community seq used (under regMu)
	external bool   // WithExternalRegistry

	commMu sync.RWMutex
	comm   map[tenant.CommunityID]uint32

	// pacer sets the least interval between two syncs of the log from
	// how many saves wait for one (syncpace.go).
	pacer *syncPacer

	closeOnce sync.Once
	closeErr  error
}

type config struct {
	cacheBytes  int64
	recordBytes int64
	memTable    int64
	external    bool
	onRemove    func(seqs []uint64)
	minSync     time.Duration
	log         *slog.Logger
	fs          vfs.FS // tests: a file system that can hold syncs back
}

// Option configures Open.
type Option func(*config) error

// DefaultCacheBytes is the block cache's size unless WithCacheBytes says
// otherwise.
const DefaultCacheBytes = 64 << 20

// WithCacheBytes sets the size of pebble's block cache (decompressed table
// blocks shared by all reads), at least 1 MiB.
func WithCacheBytes(n int64) Option {
	return func(c *config) error {
		if n < 1<<20 {
			return fmt.Errorf("lsm: cache of %d bytes is below the 1 MiB minimum", n)
		}
		c.cacheBytes = n
		return nil
	}
}

// DefaultRecordCacheBytes is the record cache's size unless
// WithRecordCacheBytes says otherwise.
const DefaultRecordCacheBytes = 64 << 20

// WithRecordCacheBytes sets the size of the cache of events (the ones Save
// wrote and queries read), which serves a query's events from memory; 0
// turns it off.
func WithRecordCacheBytes(n int64) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("lsm: record cache of %d bytes", n)
		}
		c.recordBytes = n
		return nil
	}
}

// DefaultMemTableBytes is the largest in-memory table unless
// WithMemTableBytes says otherwise (pebble starts with smaller ones and
// doubles up to it; a full one is written out as a table file while writes
// go to the next).
//
// Measured in an execution trace of a relay on one core: writing out a
// full table holds the processor for 7–13 ms at a time, and every
// connection waits behind it; the ingest OK p99 is those waits. With
// pebble's default of 4 MiB, a burst of 20,000 events wrote out tables
// often enough to set the p99; with 32 MiB, in two interleaved invocations
// of 3 runs each, the closed-loop OK p99 went from 23.7 to 17.3 ms and the
// pipelined one from 389 to 299 ms, ingest 4 % faster, for 20 MiB more
// peak memory. Fewer, larger tables also mean fewer level-0 files to
// compact. A burst longer than the table still pays for writing it out.
const DefaultMemTableBytes = 32 << 20

// WithMemTableBytes sets the largest in-memory table, from 1 MiB to 1 GiB.
// Up to two may be held at once (one being written out): memory for fewer
// pauses of the writers.
func WithMemTableBytes(n int64) Option {
	return func(c *config) error {
		if n < 1<<20 || n > 1<<30 {
			return fmt.Errorf("lsm: memtable of %d bytes is outside 1 MiB to 1 GiB", n)
		}
		c.memTable = n
		return nil
	}
}

// DefaultMinSyncInterval is the least time between two syncs of the
// write-ahead log unless WithMinSyncInterval says otherwise.
//
// Measured in an execution trace: with one P and the sync in a
// system call on it (a build without cgo, see offPSyncFS), a sync asked for
// at once runs as soon as the first saver parks, covers that one event and
// holds the P for the whole fdatasync, so the other connections' events
// wait for the next one; 100 µs lets them join it. Closed-loop ingest over
// 16 connections went from 3,018 to 6,225 events/s, a lone writer was not
// measurably slower. With the sync on its own thread the interval changes
// nothing measurable. It applies only while saves wait for a sync: a lone
// writer's syncs start at once (syncPacer).
const DefaultMinSyncInterval = 100 * time.Microsecond

// maxMinSyncInterval bounds WithMinSyncInterval: every acknowledgement
// may wait that long.
const maxMinSyncInterval = time.Second

// WithMinSyncInterval sets the least time between two syncs of the
// write-ahead log (0 to 1 s; 0 syncs as soon as asked). A save that asks
// for a sync sooner waits for the rest of the interval, and the saves that
// arrive meanwhile share that sync: fewer, larger syncs for a little
// latency. A save still returns only once its writes are synced. After a
// sync that no save waits past, the next sync starts at once.
func WithMinSyncInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || d > maxMinSyncInterval {
			return fmt.Errorf("lsm: minimum sync interval %v is outside 0 to %v", d, maxMinSyncInterval)
		}
		c.minSync = d
		return nil
	}
}

// WithExternalRegistry is for a store embedded in another that keeps the
// community registry (the embedded store's SQLite database): community ids come from there,
// and an id this store has not seen is registered at its first use
// instead of being refused. EnsureCommunity and LookupHost then serve
// nothing the other registry does not.
func WithExternalRegistry() Option {
	return func(c *config) error {
		c.external = true
		return nil
	}
}

// WithOnRemove calls fn with the seqs of the events each commit removed
// (replaced, deleted, expired), after the commit, while the writer's lock
// is held: fn must not block nor call the store. A store indexing the text
// of events (Texts) removes them from its index with it.
func WithOnRemove(fn func(seqs []uint64)) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("lsm: WithOnRemove(nil)")
		}
		c.onRemove = fn
		return nil
	}
}

// WithLogger sends pebble's own messages to l (default slog.Default()):
// flushes and compactions at debug level, errors at error level.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("lsm: WithLogger(nil)")
		}
		c.log = l
		return nil
	}
}

// Open opens the store in directory dir, creating it if needed.
func Open(ctx context.Context, dir string, opts ...Option) (*Store, error) {
	cfg := config{cacheBytes: DefaultCacheBytes, recordBytes: DefaultRecordCacheBytes, memTable: DefaultMemTableBytes, minSync: DefaultMinSyncInterval}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	cache := pebble.NewCache(cfg.cacheBytes)
	defer cache.Unref()
	po := &pebble.Options{
		Cache:  cache,
		Logger: pebbleLogger{l: cfg.log},
		FS:     cfg.fs,
		// The option bounds it to 1 GiB, so the conversion is exact.
		MemTableSize: uint64(cfg.memTable),
	}
	if po.FS == nil {
		po.FS = offPSyncFS(sizedLogFS(vfs.Default))
	}
	pacer := &syncPacer{min: cfg.minSync}
	// Bloom filters let a point read (duplicate, tombstone and coordinate
	// checks, mostly of keys that do not exist) skip tables without
	// reading them.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	if cfg.minSync > 0 {
		po.WALMinSyncInterval = pacer.interval
	}
	po.EnsureDefaults()
	db, err := pebble.Open(dir, po)
	if err != nil {
		if lockHeld(err) {
			return nil, fmt.Errorf("lsm: open %s: %w (%w)", dir, store.ErrInUse, err)
		}
		return nil, fmt.Errorf("lsm: open %s: %w", dir, err)
	}
	rc, err := newRecordCache(cfg.recordBytes)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("lsm: record cache: %w", err), db.Close())
	}
	s := &Store{db: db, log: cfg.log, cache: rc, external: cfg.external, onRemove: cfg.onRemove, comm: map[tenant.CommunityID]uint32{}, pacer: pacer}
	if err := s.load(); err != nil {
		rc.close()
		return nil, errors.Join(err, db.Close())
	}
	return s, nil
}

// load checks the layout version (writing it into a new store) and finds
// the highest sequence numbers in use.
func (s *Store) load() error {
	v, ok, err := s.get([]byte{pFormat})
	if err != nil {
		return err
	}
	convert := false
	switch {
	case !ok:
		if err := s.db.Set([]byte{pFormat}, []byte{formatVersion}, pebble.Sync); err != nil {
			return fmt.Errorf("lsm: write format: %w", err)
		}
	case len(v) == 1 && v[0] == 1:
		convert = true // no reaction slots yet: indexSlots, once the counters are known
	case len(v) != 1 || v[0] != formatVersion:
		return fmt.Errorf("lsm: store has key layout %v, this build reads %d", v, formatVersion)
	}
	last, err := s.lastKey([]byte{pEvent})
	if err != nil {
		return err
	}
	if last != nil {
		if len(last) != 9 {
			return fmt.Errorf("%w: event key of %d bytes", errCorrupt, len(last))
		}
		s.lastSeq = binary.BigEndian.Uint64(last[1:])
		s.visible.Store(s.lastSeq)
	}
	last, err = s.lastKey([]byte{pCommunity})
	if err != nil {
		return err
	}
	if last != nil {
		if len(last) != 5 {
			return fmt.Errorf("%w: community key of %d bytes", errCorrupt, len(last))
		}
		s.lastCseq = binary.BigEndian.Uint32(last[1:])
	}
	if convert {
		if err := s.indexSlots(); err != nil {
			return err
		}
	}
	if s.ids, err = loadFilter(s.db, pID); err != nil {
		return err
	}
	if s.tombs, err = loadFilter(s.db, pTombstone); err != nil {
		return err
	}
	// After indexSlots: the slots a conversion wrote are in the filter.
	s.slots, err = loadFilter(s.db, pReaction)
	return err
}

// lastKey returns a copy of the greatest key with prefix p, or nil.
func (s *Store) lastKey(p []byte) ([]byte, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, fmt.Errorf("lsm: %w", err)
	}
	var k []byte
	if it.Last() {
		k = append(k, it.Key()...)
	}
	return k, errors.Join(it.Error(), it.Close())
}

// get reads a copy of the value of k from the database.
func (s *Store) get(k []byte) ([]byte, bool, error) { return readValue(s.db, k) }

// durable returns once the write-ahead log is synced up to every write
// applied before it was called. Concurrent callers share syncs.
func (s *Store) durable() error {
	s.pacer.waiting.Add(1)
	defer s.pacer.waiting.Add(-1)
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("lsm: sync: %w", err)
	}
	return nil
}

// ErrClosed is returned by every operation on a closed Store.
var ErrClosed = errors.New("lsm: store is closed")

// lifetime counts operations in progress. An operation that starts after
// close began fails, so one nested in another (a Save inside a Query's
// loop) never waits for Close.
type lifetime struct {
	mu     sync.Mutex
	idle   *sync.Cond
	n      int
	closed bool
}

// enter starts an operation, or fails with ErrClosed; the operation ends
// with leave.
func (l *lifetime) enter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.n++
	return nil
}

func (l *lifetime) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n--; l.n == 0 && l.idle != nil {
		l.idle.Broadcast()
	}
}

// close refuses new operations and waits for those in progress.
func (l *lifetime) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.idle = sync.NewCond(&l.mu)
	for l.n > 0 {
		l.idle.Wait()
	}
}

// Close waits for the operations in progress and closes the database.
// Everything acknowledged is already synced. Calls after the first return
// the first's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.life.close()
		s.cache.close()
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("lsm: close: %w", err)
		}
	})
	return s.closeErr
}

// pebbleLogger routes pebble's messages to slog: its reports of flushes
// and compactions at debug level, errors at error level. Fatalf panics:
// pebble calls it when its commit pipeline cannot go on (a failed log write
// or sync).
type pebbleLogger struct {
	l *slog.Logger
}

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l.Enabled(context.Background(), slog.LevelDebug) {
		p.l.Debug("pebble: " + fmt.Sprintf(format, args...))
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic(msg)
}

// lockHeld reports whether err is pebble failing to take its directory
// lock: held by another process (EAGAIN from fcntl) or by another open
// store in this process (pebble's own message).
func lockHeld(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) ||
		strings.Contains(err.Error(), "lock held by current process")
}
