package postgres

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var _ store.AuditLog = (*Store)(nil)

// How the store links queued audit entries (audit_outbox) into chains.
const (
	// auditBatch is the most entries one linking transaction takes.
	auditBatch = 500
	// auditLinkers is how many communities are linked concurrently.
	auditLinkers = 2
	// auditRescan is how often the store looks for entries queued but not
	// linked (by a process that crashed in between).
	auditRescan = time.Minute
)

// outboxSQL queues records into audit_outbox in order; the caller's
// transaction must be bound to community $1.
const outboxSQL = `INSERT INTO audit_outbox (community_id, action, actor_pubkey, object_id, detail, created_at)
SELECT $1, x.a, x.p, x.o, x.d::jsonb, x.t
FROM unnest($2::text[], $3::bytea[], $4::text[], $5::text[], $6::timestamptz[]) WITH ORDINALITY AS x(a, p, o, d, t, n)
ORDER BY x.n`

// outboxArgs validates recs and returns outboxSQL's arguments.
func outboxArgs(c tenant.CommunityID, recs []audit.Record) ([]any, error) {
	now := time.Now()
	var (
		actions, objects, details = make([]string, len(recs)), make([]string, len(recs)), make([]string, len(recs))
		actors                    = make([][]byte, len(recs))
		times                     = make([]time.Time, len(recs))
	)
	for i, r := range recs {
		p, err := r.Prepare(now)
		if err != nil {
			return nil, err
		}
		actions[i], objects[i], details[i], times[i] = string(p.Action), p.Object, string(p.Detail), p.Time
		if p.HasActor {
			actors[i] = p.Actor[:]
		}
	}
	return []any{c.UUID(), actions, actors, objects, details, times}, nil
}

// queueAudit records recs inside tx, which must be bound to community c
// (setCommunitySQL). The caller calls s.audit.pending(c) once tx
// committed. Backend code of other features records their audit entries
// with it, in the transaction of their change.
func queueAudit(ctx context.Context, tx pgx.Tx, c tenant.CommunityID, recs ...audit.Record) error {
	args, err := outboxArgs(c, recs)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, outboxSQL, args...)
	return err
}

// auditLinker links queued entries into chains in the background: one
// transaction and one per-community advisory lock per batch of up to
// auditBatch entries, up to auditLinkers communities at a time.
type auditLinker struct {
	s    *Store
	mu   sync.Mutex
	todo map[[16]byte]bool // communities with entries queued by this process
	busy map[[16]byte]bool // being linked by a linker goroutine
	wake chan struct{}
}

func newAuditLinker(s *Store) *auditLinker {
	return &auditLinker{s: s, todo: map[[16]byte]bool{}, busy: map[[16]byte]bool{}, wake: make(chan struct{}, 1)}
}

// pending notes that c has queued entries.
func (l *auditLinker) pending(c tenant.CommunityID) {
	l.mu.Lock()
	l.todo[c.UUID()] = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// next hands out a pending community no other linker works on.
func (l *auditLinker) next() ([16]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.todo {
		if !l.busy[c] {
			delete(l.todo, c)
			l.busy[c] = true
			return c, true
		}
	}
	return [16]byte{}, false
}

func (l *auditLinker) done(c [16]byte) {
	l.mu.Lock()
	delete(l.busy, c)
	more := len(l.todo) > 0
	l.mu.Unlock()
	if more {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// run is one linker goroutine; it exits when stop closes.
func (l *auditLinker) run(stop <-chan struct{}, rescan bool) {
	defer l.s.wg.Done()
	var tick <-chan time.Time
	if rescan {
		t := time.NewTicker(auditRescan)
		defer t.Stop()
		tick = t.C
		l.rescan()
	}
	for {
		select {
		case <-stop:
			return
		case <-tick:
			l.rescan()
		case <-l.wake:
		}
		for {
			c, ok := l.next()
			if !ok {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
			err := l.s.linkAll(ctx, tenant.FromUUID(c))
			cancel()
			l.done(c)
			if err != nil {
				// Left queued: the next rescan retries.
				l.s.cfg.logger.Warn("postgres: linking audit entries failed", "community", tenant.FromUUID(c), "err", err)
			}
		}
	}
}

// rescan marks every community with queued entries pending.
func (l *auditLinker) rescan() {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	ids, err := l.s.auditPendingCommunities(ctx)
	if err != nil {
		l.s.cfg.logger.Warn("postgres: looking for queued audit entries failed", "err", err)
		return
	}
	for _, id := range ids {
		l.pending(tenant.FromUUID(id))
	}
}

func (s *Store) auditPendingCommunities(ctx context.Context) ([][16]byte, error) {
	var ids [][16]byte
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT buzz_audit_pending()`)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[[16]byte])
		return err
	})
	return ids, err
}

// linkAll links every queued entry of c.
func (s *Store) linkAll(ctx context.Context, c tenant.CommunityID) error {
	for {
		n, err := s.linkBatch(ctx, c)
		if err != nil {
			return err
		}
		if n < auditBatch {
			return nil
		}
	}
}

// linkBatch links up to auditBatch queued entries of c in one transaction
// holding c's chain lock, and returns how many it linked.
func (s *Store) linkBatch(ctx context.Context, c tenant.CommunityID) (int, error) {
	var n int
	err := s.communityTx(ctx, c, false, func(tx pgx.Tx) error { // linking is bookkeeping, never an authority event's effect
		cu := c.UUID()
		var b pgx.Batch
		b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('buzz_audit:' || $1::text, 0))`, c.String())
		b.Queue(`SELECT seq, hash FROM audit_log WHERE community_id = $1 ORDER BY seq DESC LIMIT 1`, cu)
		b.Queue(`DELETE FROM audit_outbox WHERE community_id = $1 AND id IN (
    SELECT id FROM audit_outbox WHERE community_id = $1 ORDER BY id LIMIT $2)
RETURNING id, action, actor_pubkey, object_id, detail::text, created_at`, cu, auditBatch)
		br := tx.SendBatch(ctx, &b)
		type queued struct {
			id     int64
			action string
			actor  []byte
			object string
			detail string
			at     time.Time
		}
		var (
			seq  int64
			head []byte
			q    []queued
		)
		err := func() error {
			if _, err := br.Exec(); err != nil {
				return err
			}
			if err := br.QueryRow().Scan(&seq, &head); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			var r queued
			_, err = pgx.ForEachRow(rows, []any{&r.id, &r.action, &r.actor, &r.object, &r.detail, &r.at}, func() error {
				q = append(q, r)
				return nil
			})
			return err
		}()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil || len(q) == 0 {
			return err
		}
		slices.SortFunc(q, func(a, b queued) int { return int(a.id - b.id) })
		var prev [32]byte
		copy(prev[:], head)
		var (
			seqs                      = make([]int64, len(q))
			hashes, prevs, actors     = make([][]byte, len(q)), make([][]byte, len(q)), make([][]byte, len(q))
			actions, objects, details = make([]string, len(q)), make([]*string, len(q)), make([]string, len(q))
			times                     = make([]time.Time, len(q))
			versions                  = make([]int16, len(q))
		)
		for i, r := range q {
			detail, err := audit.CanonicalJSON(json.RawMessage(r.detail))
			if err != nil {
				return fmt.Errorf("queued audit entry %d: %w", r.id, err)
			}
			p := audit.Prepared{Action: audit.Action(r.action), Object: r.object, Detail: detail, Time: audit.Truncate(r.at)}
			if len(r.actor) == 32 {
				p.HasActor = true
				copy(p.Actor[:], r.actor)
			}
			e := audit.Link(c, seq, prev, p)
			seqs[i], versions[i] = e.Seq, int16(e.Version)
			if e.Seq > 1 {
				prevs[i] = slices.Clone(e.PrevHash[:])
			}
			actions[i], details[i], times[i], actors[i] = string(e.Action), string(e.Detail), e.Time, r.actor
			if e.Object != "" {
				objects[i] = &q[i].object
			}
			hashes[i] = slices.Clone(e.Hash[:])
			seq, prev = e.Seq, e.Hash
		}
		_, err = tx.Exec(ctx, `INSERT INTO audit_log (community_id, seq, hash, prev_hash, hash_version, action, actor_pubkey, object_id, detail, created_at)
SELECT $1, x.s, x.h, x.p, x.v, x.a, x.k, x.o, x.d::jsonb, x.t
FROM unnest($2::bigint[], $3::bytea[], $4::bytea[], $5::smallint[], $6::text[], $7::bytea[], $8::text[], $9::text[], $10::timestamptz[])
    AS x(s, h, p, v, a, k, o, d, t)`, cu, seqs, hashes, prevs, versions, actions, actors, objects, details, times)
		if err != nil {
			return err
		}
		n = len(q)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: link audit entries: %w", err)
	}
	return n, nil
}

// AppendAudit implements store.AuditLog.
func (s *Store) AppendAudit(ctx context.Context, c tenant.CommunityID, recs ...audit.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if c.IsZero() {
		return errors.New("postgres: append audit: zero community")
	}
	args, err := outboxArgs(c, recs)
	if err != nil {
		return err
	}
	var b pgx.Batch
	b.Queue(outboxSQL, args...)
	if err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		_, err := br.Exec()
		return err
	}); err != nil {
		return fmt.Errorf("postgres: append audit: %w", err)
	}
	s.audit.pending(c)
	return nil
}

// AuditEntries implements store.AuditLog. It first links c's queued
// entries, so the caller sees every change committed before the call.
func (s *Store) AuditEntries(ctx context.Context, c tenant.CommunityID, afterSeq int64, limit int) ([]audit.Entry, error) {
	limit = min(limit, store.MaxAuditPage)
	if limit <= 0 || c.IsZero() {
		return []audit.Entry{}, nil
	}
	if err := s.linkAll(ctx, c); err != nil {
		return nil, err
	}
	out := []audit.Entry{}
	var b pgx.Batch
	b.Queue(`SELECT seq, hash, prev_hash, hash_version, action, actor_pubkey, coalesce(object_id, ''), detail::text, created_at
FROM audit_log WHERE community_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, c.UUID(), afterSeq, limit)
	err := s.inCommunity(ctx, c, &b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var (
			hash, prev, actor []byte
			version           int16
			action, detail    string
			at                time.Time
			e                 audit.Entry
		)
		_, err = pgx.ForEachRow(rows, []any{&e.Seq, &hash, &prev, &version, &action, &actor, &e.Object, &detail, &at}, func() error {
			x := audit.Entry{Community: c, Seq: e.Seq, Version: int(version), Action: audit.Action(action), Object: e.Object, Time: at.UTC()}
			copy(x.Hash[:], hash)
			copy(x.PrevHash[:], prev)
			if actor != nil {
				x.Actor = hex.EncodeToString(actor)
			}
			d, err := audit.CanonicalJSON(json.RawMessage(detail))
			if err != nil {
				d = []byte(detail) // stored detail was altered: the hash check reports it
			}
			x.Detail = d
			out = append(out, x)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: audit entries: %w", err)
	}
	return out, nil
}

// AuditCommunities implements store.AuditLog.
func (s *Store) AuditCommunities(ctx context.Context) ([]tenant.CommunityID, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM communities ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: audit communities: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
	if err != nil {
		return nil, fmt.Errorf("postgres: audit communities: %w", err)
	}
	out := make([]tenant.CommunityID, len(ids))
	for i, id := range ids {
		out[i] = tenant.FromUUID(id)
	}
	return out, nil
}

// SyncAudit implements store.AuditLog: it links every queued entry of
// every community (also those another process queued).
func (s *Store) SyncAudit(ctx context.Context) error {
	ids, err := s.auditPendingCommunities(ctx)
	if err != nil {
		return fmt.Errorf("postgres: sync audit: %w", err)
	}
	for _, id := range ids {
		if err := s.linkAll(ctx, tenant.FromUUID(id)); err != nil {
			return err
		}
	}
	return nil
}
