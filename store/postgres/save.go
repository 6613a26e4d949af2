package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

const saveSQL = `SELECT buzz_save_event($1, $2, $3, $4, $5, $6::text::jsonb, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`

// commitTimeout bounds one group-commit transaction, so a hung server fails
// the waiting Saves instead of blocking them forever.
const commitTimeout = 30 * time.Second

// saveArgs are the bind parameters of buzz_save_event, in order.
type saveArgs struct {
	community [16]byte
	id        []byte
	pubkey    []byte
	createdAt int64
	kind      int32
	tags      string
	content   string
	sig       []byte
	raw       []byte
	channel   *[16]byte // the "h" tag's channel; nil = community-wide
	dTag      *string
	expiresAt *int64
	lock      *int64
	tagNames  []string
	tagValues [][]byte
	delIDs    [][]byte
	delKinds  []int32
	delDTags  []string
	delLocks  []int64

	// audit is the chain entry of a deletion request, queued by the same
	// statement that stores it (nil for other kinds).
	audit *auditArgs
}

// auditArgs are the audit bind parameters of buzz_save_event_audited.
type auditArgs struct {
	action, object, detail string
	actor                  []byte // nil: no actor
	at                     time.Time
}

// savedAuditedSQL is saveSQL that also queues the event's audit entry when
// the event is stored (migration 21).
const savedAuditedSQL = `SELECT buzz_save_event_audited($1, $2, $3, $4, $5, $6::text::jsonb, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23::text::jsonb, $24)`

// statement returns the SQL that saves the event and its arguments.
func (a *saveArgs) statement() (string, []any) {
	if a.audit == nil {
		return saveSQL, a.values()
	}
	return savedAuditedSQL, append(a.values(), a.audit.action, a.audit.actor, a.audit.object, a.audit.detail, a.audit.at)
}

func (a *saveArgs) values() []any {
	return []any{a.community, a.id, a.pubkey, a.createdAt, a.kind, a.tags, a.content, a.sig, a.raw,
		a.channelArg(), a.dTag, a.expiresAt, a.lock, a.tagNames, a.tagValues,
		a.delIDs, a.delKinds, a.delDTags, a.delLocks}
}

// channelArg is the channel as a bind parameter (NULL when none).
func (a *saveArgs) channelArg() any {
	if a.channel == nil {
		return nil
	}
	return *a.channel
}

// encodeEvent prepares an event for buzz_save_event. It fails on an event
// that is not structurally valid (bad hex fields), and with
// channel.ErrInvalidTag when its "h" tags do not name one channel.
func encodeEvent(c tenant.CommunityID, ev *nostr.Event) (*saveArgs, error) {
	a := &saveArgs{community: c.UUID(), createdAt: ev.CreatedAt, kind: int32(ev.Kind)}
	var ok bool
	if a.id, ok = nostr.DecodeHex32(ev.ID); !ok {
		return nil, errors.New("postgres: invalid: event id is not 64 lowercase hex characters")
	}
	if a.pubkey, ok = nostr.DecodeHex32(ev.PubKey); !ok {
		return nil, errors.New("postgres: invalid: event pubkey is not 64 lowercase hex characters")
	}
	if a.sig, ok = decodeHexN(ev.Sig, 64); !ok {
		return nil, errors.New("postgres: invalid: event sig is not 128 lowercase hex characters")
	}
	if ev.Kind < 0 || ev.Kind > nostr.MaxKind {
		return nil, errors.New("postgres: invalid: event kind out of range")
	}
	ch, inChannel, err := channel.OfEvent(ev)
	if err != nil {
		return nil, err
	}
	if inChannel {
		u := [16]byte(ch)
		a.channel = &u
	}
	a.raw = ev.AppendJSON(nil)
	tags := make([][]string, len(ev.Tags))
	for i, t := range ev.Tags {
		tags[i] = t
	}
	a.tags = tagsJSON(tags)
	a.content = sqlText(ev.Content)

	switch {
	case nostr.IsAddressable(ev.Kind):
		d := sqlText(ev.DTag())
		a.dTag = &d
	case nostr.IsReplaceable(ev.Kind):
		d := ""
		a.dTag = &d
	}
	if a.dTag != nil {
		l := coordinateLock(c, ev.Kind, ev.PubKey, *a.dTag)
		a.lock = &l
	}
	if exp, ok := ev.Expiration(); ok {
		a.expiresAt = &exp
	}

	type tagRow struct{ name, value string }
	seen := make(map[tagRow]struct{}, len(ev.Tags))
	for _, t := range ev.Tags {
		if len(t) < 2 || !isIndexedTagName(t[0]) {
			continue
		}
		k := tagKey(t[1])
		r := tagRow{t[0], string(k)}
		if _, dup := seen[r]; dup {
			continue
		}
		seen[r] = struct{}{}
		a.tagNames = append(a.tagNames, t[0])
		a.tagValues = append(a.tagValues, k)
	}

	if ev.Kind == nostr.KindDeletion {
		a.encodeDeletion(c, ev)
	}
	return a, nil
}

// encodeDeletion collects the targets of a kind 5 request
// (store.DeletionTargets), each once. Coordinates are sorted by lock key so
// concurrent requests take their locks in one order.
func (a *saveArgs) encodeDeletion(c tenant.CommunityID, ev *nostr.Event) {
	type coord struct {
		kind int
		d    string
		lock int64
	}
	ids, targets := store.DeletionTargets(ev)
	seenID := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !seenID[id] {
			seenID[id] = true
			b, _ := nostr.DecodeHex32(id) // DeletionTargets keeps event ids only
			a.delIDs = append(a.delIDs, b)
		}
	}
	var coords []coord
	seenCoord := map[int64]bool{}
	for _, t := range targets {
		d := t.D
		if nostr.IsAddressable(t.Kind) {
			d = sqlText(d)
		}
		l := coordinateLock(c, t.Kind, ev.PubKey, d)
		if seenCoord[l] {
			continue
		}
		seenCoord[l] = true
		coords = append(coords, coord{t.Kind, d, l})
	}
	slices.SortFunc(coords, func(x, y coord) int {
		switch {
		case x.lock < y.lock:
			return -1
		case x.lock > y.lock:
			return 1
		}
		return 0
	})
	for _, co := range coords {
		a.delKinds = append(a.delKinds, int32(co.kind))
		a.delDTags = append(a.delDTags, co.d)
		a.delLocks = append(a.delLocks, co.lock)
	}
}

func saveResult(code int16) error {
	switch code {
	case 0:
		return nil
	case 1:
		return store.ErrDuplicate
	case 2:
		return store.ErrSuperseded
	case 3:
		return store.ErrDeleted
	}
	return fmt.Errorf("postgres: save: unexpected result code %d", code)
}

type saveReq struct {
	ctx  context.Context // the caller's: a request it cancelled is not written
	args *saveArgs
	done chan error // buffered: the committer never blocks on it
}

// Save stores ev in community c following the store.EventStore semantics.
// It returns nil only after the transaction holding the event committed.
func (s *Store) Save(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	if c.IsZero() {
		return errors.New("postgres: save: zero community")
	}
	if ev == nil {
		return errors.New("postgres: save: nil event")
	}
	args, err := encodeEvent(c, ev)
	if err != nil {
		return err
	}
	if ev.Kind == nostr.KindDeletion && !store.DeletionAuditOff(ctx) {
		p, err := store.DeletionAudit(ev).Prepare(time.Now())
		if err != nil {
			return err
		}
		args.audit = &auditArgs{action: string(p.Action), object: p.Object, detail: string(p.Detail), at: p.Time}
		if p.HasActor {
			args.audit.actor = p.Actor[:]
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &saveReq{ctx: ctx, args: args, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	select {
	case s.queue <- req:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		if err == nil {
			s.noteSaved(1)
		}
		return err
	case <-ctx.Done():
		// The event may still commit; it is not acknowledged.
		return ctx.Err()
	}
}

// committer drains the queue, committing whatever accumulated as one batch.
func (s *Store) committer() {
	defer s.wg.Done()
	batch := make([]*saveReq, 0, s.cfg.batchSize)
	for first := range s.queue {
		batch = append(batch[:0], first)
		batch = s.collect(batch)
		s.commitBatch(batch)
	}
}

// collect adds whatever is already queued to batch. If that found company
// (the store is under concurrent load) and a linger is configured, it waits
// up to the linger for the batch to fill; a lone Save is never delayed.
func (s *Store) collect(batch []*saveReq) []*saveReq {
	drain := func() bool {
		for len(batch) < s.cfg.batchSize {
			select {
			case r, ok := <-s.queue:
				if !ok {
					return false
				}
				batch = append(batch, r)
			default:
				return true
			}
		}
		return false
	}
	if !drain() || len(batch) < 2 || s.cfg.linger <= 0 {
		return batch
	}
	t := time.NewTimer(s.cfg.linger)
	defer t.Stop()
	for len(batch) < s.cfg.batchSize {
		select {
		case r, ok := <-s.queue:
			if !ok {
				return batch
			}
			batch = append(batch, r)
		case <-t.C:
			return batch
		}
	}
	return batch
}

// commitBatch writes a batch in one transaction, pipelined in one round
// trip. If any event fails (an error, not a duplicate/superseded/deleted
// verdict) the transaction is rolled back and every event is retried in its
// own transaction, so one bad event cannot fail its neighbours.
func (s *Store) commitBatch(batch []*saveReq) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	batch = live
	if len(batch) == 0 {
		return
	}
	if len(batch) == 1 {
		batch[0].done <- s.saveOne(ctx, batch[0].args)
		return
	}
	codes, err := s.saveMany(ctx, batch)
	if err != nil {
		s.cfg.logger.Debug("postgres: group commit failed; retrying events one by one", "events", len(batch), "err", err)
		for _, r := range batch {
			r.done <- s.saveOne(ctx, r.args)
		}
		return
	}
	for i, r := range batch {
		if codes[i] == 0 && r.args.audit != nil {
			s.audit.pending(tenant.FromUUID(r.args.community))
		}
		r.done <- saveResult(codes[i])
	}
}

// saveOne writes one event in its own transaction. A deadlock victim (its
// transaction was rolled back whole) is retried.
func (s *Store) saveOne(ctx context.Context, a *saveArgs) error {
	var code int16
	var err error
	q, args := a.statement()
	for attempt := 0; attempt < 3; attempt++ {
		err = s.pool.QueryRow(ctx, q, args...).Scan(&code)
		if !isDeadlock(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("postgres: save: %w", err)
	}
	if code == 0 && a.audit != nil {
		s.audit.pending(tenant.FromUUID(a.community))
	}
	return saveResult(code)
}

func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

// lockAllSQL takes a batch's coordinate locks up front, in ascending order
// (unnest keeps the array's order), so two batches never wait for each
// other's locks in opposite orders; buzz_save_event re-takes them
// (advisory locks are re-entrant).
const lockAllSQL = `SELECT count(pg_advisory_xact_lock(k)) FROM unnest($1::bigint[]) AS k`

// batchLocks returns the sorted, distinct coordinate locks of a batch.
func batchLocks(batch []*saveReq) []int64 {
	var locks []int64
	for _, r := range batch {
		if r.args.lock != nil {
			locks = append(locks, *r.args.lock)
		}
		locks = append(locks, r.args.delLocks...)
	}
	slices.Sort(locks)
	return slices.Compact(locks)
}

// plainSQL inserts a set of plain events (neither replaceable, addressable
// nor deletion requests) of one community in one statement: the same
// checks as buzz_save_event (tombstone, then idempotent insert), set-based.
// It returns (ord, code) for every input row; ids must be distinct. Tag
// rows are written only for events this statement inserted, so they cannot
// conflict (and skipping ON CONFLICT there halves the cost of the tag
// insert).
const plainSQL = `WITH input AS (
    SELECT * FROM unnest($2::bytea[], $3::bytea[], $4::bigint[], $5::integer[], $6::text[], $7::text[],
                         $8::bytea[], $9::bytea[], $10::bigint[], $11::integer[], $15::uuid[])
        AS t(id, pubkey, created_at, kind, tags, content, sig, raw, expires_at, ord, channel_id)),
  allowed AS (
    SELECT i.* FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM event_tombstones d
                      WHERE d.community_id = $1 AND d.event_id = i.id AND d.pubkey = i.pubkey)),
  ins AS (
    INSERT INTO events (community_id, created_at, id, pubkey, kind, tags, content, sig, raw, expires_at, channel_id)
    SELECT $1, a.created_at, a.id, a.pubkey, a.kind, a.tags::jsonb, a.content, a.sig, a.raw, a.expires_at, a.channel_id
    FROM allowed a
    ON CONFLICT DO NOTHING
    RETURNING id, created_at, kind, expires_at, channel_id),
  tagged AS (
    INSERT INTO event_tags (community_id, name, value, created_at, event_id, kind, expires_at, channel_id)
    SELECT $1, tn.name, tn.value, ins.created_at, ins.id, ins.kind, ins.expires_at, ins.channel_id
    FROM ins JOIN unnest($12::bytea[], $13::text[], $14::bytea[]) AS tn(event_id, name, value) ON tn.event_id = ins.id)
SELECT i.ord, CASE WHEN ins.id IS NOT NULL THEN 0 WHEN a.id IS NULL THEN 3 ELSE 1 END::smallint
FROM input i LEFT JOIN ins ON ins.id = i.id LEFT JOIN allowed a ON a.id = i.id`

// isPlain reports whether an event takes the set-based path.
func (a *saveArgs) isPlain() bool { return a.lock == nil && a.kind != nostr.KindDeletion }

// plainGroup is the plain events of one community in a run of the batch.
type plainGroup struct {
	community [16]byte
	idx       []int // positions in the batch, distinct ids
}

// queuePlain adds one set-based insert to b.
func queuePlain(b *pgx.Batch, batch []*saveReq, g *plainGroup) {
	n := len(g.idx)
	var (
		ids, pubkeys, sigs, raws [][]byte
		createdAts, expires      = make([]int64, 0, n), make([]*int64, 0, n)
		kinds, ords              = make([]int32, 0, n), make([]int32, 0, n)
		channels                 = make([]pgtype.UUID, 0, n)
		tags, contents           = make([]string, 0, n), make([]string, 0, n)
		tagIDs, tagValues        [][]byte
		tagNames                 []string
	)
	for _, i := range g.idx {
		a := batch[i].args
		ids = append(ids, a.id)
		pubkeys = append(pubkeys, a.pubkey)
		createdAts = append(createdAts, a.createdAt)
		kinds = append(kinds, a.kind)
		tags = append(tags, a.tags)
		contents = append(contents, a.content)
		sigs = append(sigs, a.sig)
		raws = append(raws, a.raw)
		expires = append(expires, a.expiresAt)
		ords = append(ords, int32(i))
		if a.channel != nil {
			channels = append(channels, pgtype.UUID{Bytes: *a.channel, Valid: true})
		} else {
			channels = append(channels, pgtype.UUID{})
		}
		for j := range a.tagNames {
			tagIDs = append(tagIDs, a.id)
			tagNames = append(tagNames, a.tagNames[j])
			tagValues = append(tagValues, a.tagValues[j])
		}
	}
	b.Queue(setCommunitySQL, tenant.FromUUID(g.community).String())
	b.Queue(plainSQL, g.community, ids, pubkeys, createdAts, kinds, tags, contents, sigs, raws, expires, ords,
		tagIDs, tagNames, tagValues, channels)
}

// saveMany writes a batch in one transaction, pipelined in one round trip.
// Runs of plain events are inserted set-based, one statement per
// community; every other event goes through buzz_save_event in arrival
// order, so a deletion or replacement sees exactly the events before it.
// An event repeated within the batch gets the verdict a second Save would.
func (s *Store) saveMany(ctx context.Context, batch []*saveReq) (codes []int16, err error) {
	type step struct {
		group  *plainGroup // nil: a buzz_save_event call for batch[single]
		single int
	}
	var (
		b       pgx.Batch
		steps   []step
		run     []*plainGroup
		dupOf   = map[int]int{}
		firstOf = map[[48]byte]int{}
	)
	flush := func() {
		for _, g := range run {
			queuePlain(&b, batch, g)
			steps = append(steps, step{group: g})
		}
		run = run[:0]
		clear(firstOf)
	}
	for i, r := range batch {
		a := r.args
		if !a.isPlain() {
			flush()
			q, args := a.statement()
			b.Queue(q, args...)
			steps = append(steps, step{single: i})
			continue
		}
		var key [48]byte
		copy(key[:16], a.community[:])
		copy(key[16:], a.id)
		if j, ok := firstOf[key]; ok {
			dupOf[i] = j
			continue
		}
		firstOf[key] = i
		var g *plainGroup
		for _, x := range run {
			if x.community == a.community {
				g = x
				break
			}
		}
		if g == nil {
			g = &plainGroup{community: a.community}
			run = append(run, g)
		}
		g.idx = append(g.idx, i)
	}
	flush()
	locks := batchLocks(batch)
	if len(locks) > 0 {
		b.QueuedQueries = append([]*pgx.QueuedQuery{{SQL: lockAllSQL, Arguments: []any{locks}}}, b.QueuedQueries...)
	}

	// The batch is one pipeline ending in a single Sync, so the server runs
	// it as one implicit transaction: any error rolls back all of it, and it
	// commits when the Sync is processed. br.Close returns only after the
	// ReadyForQuery that follows the commit (with the commit's error, if
	// any), so no explicit BEGIN and COMMIT round trips are needed.
	br := s.pool.SendBatch(ctx, &b)
	codes = make([]int16, len(batch))
	readAll := func() error {
		if len(locks) > 0 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		for _, st := range steps {
			if st.group == nil {
				if err := br.QueryRow().Scan(&codes[st.single]); err != nil {
					return err
				}
				continue
			}
			if _, err := br.Exec(); err != nil { // set_config
				return err
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			var ord int32
			var code int16
			_, err = pgx.ForEachRow(rows, []any{&ord, &code}, func() error {
				codes[ord] = code
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := readAll(); err != nil {
		_ = br.Close()
		return nil, fmt.Errorf("postgres: save: %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("postgres: save: commit: %w", err)
	}
	for i, j := range dupOf {
		switch codes[j] {
		case 0:
			codes[i] = 1
		default:
			codes[i] = codes[j]
		}
	}
	return codes, nil
}
