package embedded

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The operator plane: provisioning, quotas, archiving, ownership and host
// aliases (see operator.Store for the contract). Every write runs on the
// single writer inside its BEGIN IMMEDIATE transaction, so a quota count
// and the insert it guards are atomic, also across processes sharing the
// file. A sentinel outcome (exists, limit, conflict) is reported through a
// captured variable with a nil return, so it never fails the writer's batch.

const communityCols = `seq, id, host, owner_pubkey, created_at, archived_at`

type communityRow struct {
	seq int64
	c   store.Community
}

type rowScanner interface{ Scan(dest ...any) error }

func scanCommunity(r rowScanner) (communityRow, error) {
	var (
		row        communityRow
		raw, owner []byte
		created    int64
		archived   sql.NullInt64
	)
	if err := r.Scan(&row.seq, &raw, &row.c.Host, &owner, &created, &archived); err != nil {
		return communityRow{}, err
	}
	id, err := communityFromBytes(raw)
	if err != nil {
		return communityRow{}, err
	}
	row.c.ID = id
	if owner != nil {
		if len(owner) != 32 {
			return communityRow{}, fmt.Errorf("sqlite: corrupt owner key (%d bytes)", len(owner))
		}
		row.c.OwnerPubKey = hex.EncodeToString(owner)
	}
	row.c.CreatedAt = time.Unix(created, 0).UTC()
	if archived.Valid {
		row.c.ArchivedAt = time.Unix(archived.Int64, 0).UTC()
	}
	return row, nil
}

// ownerBytes decodes an owner key; "" is NULL.
func ownerBytes(pubkey string) (any, error) {
	if pubkey == "" {
		return nil, nil
	}
	b, ok := nostr.DecodeHex32(pubkey)
	if !ok {
		return nil, errors.New("sqlite: owner key must be 64 lowercase hex characters")
	}
	return b, nil
}

// findByHost returns the community whose host or alias is host, archived or
// not, or sql.ErrNoRows.
func findByHost(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, host string) (communityRow, error) {
	return scanCommunity(q.QueryRowContext(ctx, `
SELECT `+communityCols+` FROM communities WHERE host = ?1
UNION ALL
SELECT c.seq, c.id, c.host, c.owner_pubkey, c.created_at, c.archived_at
FROM community_host_aliases a JOIN communities c ON c.seq = a.community WHERE a.host = ?1
LIMIT 1`, host))
}

func countOwned(ctx context.Context, conn *sql.Conn, owner any) (int, error) {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM communities WHERE owner_pubkey = ? AND archived_at IS NULL`, owner).Scan(&n)
	return n, err
}

// CreateCommunity implements operator.Store.
func (s *Store) CreateCommunity(ctx context.Context, n store.NewCommunity) (store.Community, bool, error) {
	if err := tenant.ValidateHost(n.Host); err != nil {
		return store.Community{}, false, fmt.Errorf("%w: %w", store.ErrInvalidHost, err)
	}
	owner, err := ownerBytes(n.OwnerPubKey)
	if err != nil {
		return store.Community{}, false, err
	}
	var (
		row     communityRow
		created bool
		outcome error
	)
	callerCtx := ctx
	err = s.submit(ctx, func(w *writer) error {
		ctx := w.ctx
		existing, err := findByHost(ctx, w.conn, n.Host)
		switch {
		case err == nil:
			switch {
			case n.CreateOnly:
				outcome = store.ErrCommunityExists
			case n.OwnerPubKey != "" && existing.c.OwnerPubKey != n.OwnerPubKey:
				outcome = store.ErrOwnerConflict
			default:
				row = existing
			}
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return internal("create community", err)
		}
		if owner != nil && n.MaxPerOwner > 0 {
			cnt, err := countOwned(ctx, w.conn, owner)
			if err != nil {
				return internal("create community", err)
			}
			if cnt >= n.MaxPerOwner {
				outcome = store.ErrCommunityLimit
				return nil
			}
		}
		fresh := tenant.NewCommunityID()
		u := fresh.UUID()
		row, err = scanCommunity(w.conn.QueryRowContext(ctx, `
INSERT INTO communities (id, host, owner_pubkey, created_at) VALUES (?, ?, ?, ?)
RETURNING `+communityCols, u[:], n.Host, owner, time.Now().Unix()))
		if err != nil {
			return internal("create community", err)
		}
		created = true
		return w.appendAudit(row.seq, row.c.ID, store.OperatorAudit(callerCtx, audit.CommunityProvisioned, row.c, nil))
	})
	if err == nil {
		err = outcome
	}
	if err != nil {
		return store.Community{}, false, err
	}
	s.remember(row.c.ID, row.seq)
	return row.c, created, nil
}

// OwnedCommunities implements operator.Store.
func (s *Store) OwnedCommunities(ctx context.Context, ownerPubKey string) ([]store.Community, error) {
	owner, err := ownerBytes(ownerPubKey)
	if err != nil {
		return nil, err
	}
	if owner == nil {
		return nil, errors.New("sqlite: OwnedCommunities: empty owner key")
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+communityCols+` FROM communities
WHERE owner_pubkey = ? ORDER BY created_at, seq`, owner)
	if err != nil {
		return nil, internal("owned communities", err)
	}
	defer rows.Close()
	out := []store.Community{}
	for rows.Next() {
		row, err := scanCommunity(rows)
		if err != nil {
			return nil, internal("owned communities", err)
		}
		out = append(out, row.c)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("owned communities", err)
	}
	return out, nil
}

// CommunityByHost implements operator.Store.
func (s *Store) CommunityByHost(ctx context.Context, normalizedHost string) (store.Community, error) {
	row, err := findByHost(ctx, s.rdb, normalizedHost)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.Community{}, store.ErrNoCommunity
	case err != nil:
		return store.Community{}, internal("community by host", err)
	}
	return row.c, nil
}

// CommunityByID returns the community with id, archived or not;
// store.ErrNoCommunity when there is none.
func (s *Store) CommunityByID(ctx context.Context, id tenant.CommunityID) (store.Community, error) {
	u := id.UUID()
	row, err := scanCommunity(s.rdb.QueryRowContext(ctx, `SELECT `+communityCols+` FROM communities WHERE id = ?`, u[:]))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.Community{}, store.ErrNoCommunity
	case err != nil:
		return store.Community{}, internal("community by id", err)
	}
	return row.c, nil
}

// SetArchived implements operator.Store.
func (s *Store) SetArchived(ctx context.Context, id tenant.CommunityID, ownerPubKey string, archived bool, maxPerOwner int) (store.Community, bool, error) {
	if _, err := ownerBytes(ownerPubKey); err != nil {
		return store.Community{}, false, err
	}
	u := id.UUID()
	var (
		row     communityRow
		changed bool
		outcome error
	)
	callerCtx := ctx
	err := s.submit(ctx, func(w *writer) error {
		ctx := w.ctx
		cur, err := scanCommunity(w.conn.QueryRowContext(ctx, `SELECT `+communityCols+` FROM communities WHERE id = ?`, u[:]))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			outcome = store.ErrNoCommunity
			return nil
		case err != nil:
			return internal("archive community", err)
		}
		if cur.c.OwnerPubKey != ownerPubKey {
			outcome = store.ErrOwnerConflict
			return nil
		}
		if cur.c.Archived() == archived {
			row = cur
			return nil
		}
		var at any // NULL: unarchive
		if archived {
			at = time.Now().Unix()
		} else if ownerPubKey != "" && maxPerOwner > 0 {
			owner, _ := ownerBytes(ownerPubKey)
			cnt, err := countOwned(ctx, w.conn, owner)
			if err != nil {
				return internal("unarchive community", err)
			}
			if cnt >= maxPerOwner {
				outcome = store.ErrCommunityLimit
				return nil
			}
		}
		row, err = scanCommunity(w.conn.QueryRowContext(ctx, `UPDATE communities SET archived_at = ? WHERE seq = ?
RETURNING `+communityCols, at, cur.seq))
		if err != nil {
			return internal("archive community", err)
		}
		changed = true
		action := audit.CommunityArchived
		if !archived {
			action = audit.CommunityUnarchived
		}
		return w.appendAudit(row.seq, row.c.ID, store.OperatorAudit(callerCtx, action, row.c, nil))
	})
	if err == nil {
		err = outcome
	}
	if err != nil {
		return store.Community{}, false, err
	}
	return row.c, changed, nil
}

// TransferCommunity implements operator.Store.
func (s *Store) TransferCommunity(ctx context.Context, id [16]byte, newOwner, expectedOwner string, maxPerOwner int) (store.Community, string, bool, error) {
	next, err := ownerBytes(newOwner)
	if err != nil {
		return store.Community{}, "", false, err
	}
	if next == nil {
		return store.Community{}, "", false, errors.New("sqlite: TransferCommunity: empty new owner")
	}
	if _, err := ownerBytes(expectedOwner); err != nil {
		return store.Community{}, "", false, err
	}
	var (
		row      communityRow
		previous string
		changed  bool
		outcome  error
	)
	callerCtx := ctx
	err = s.submit(ctx, func(w *writer) error {
		ctx := w.ctx
		cur, err := scanCommunity(w.conn.QueryRowContext(ctx, `SELECT `+communityCols+` FROM communities WHERE id = ?`, id[:]))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			outcome = store.ErrNoCommunity
			return nil
		case err != nil:
			return internal("transfer community", err)
		}
		previous = cur.c.OwnerPubKey
		if cur.c.OwnerPubKey == newOwner {
			row = cur
			return nil
		}
		if cur.c.OwnerPubKey != expectedOwner {
			outcome = store.ErrOwnerConflict
			return nil
		}
		if !cur.c.Archived() && maxPerOwner > 0 {
			cnt, err := countOwned(ctx, w.conn, next)
			if err != nil {
				return internal("transfer community", err)
			}
			if cnt >= maxPerOwner {
				outcome = store.ErrCommunityLimit
				return nil
			}
		}
		row, err = scanCommunity(w.conn.QueryRowContext(ctx, `UPDATE communities SET owner_pubkey = ? WHERE seq = ?
RETURNING `+communityCols, next, cur.seq))
		if err != nil {
			return internal("transfer community", err)
		}
		changed = true
		return w.appendAudit(row.seq, row.c.ID, store.OperatorAudit(callerCtx, audit.CommunityTransferred, row.c,
			map[string]any{"previous_owner": previous}))
	})
	if err == nil {
		err = outcome
	}
	if err != nil {
		return store.Community{}, "", false, err
	}
	return row.c, previous, changed, nil
}

// AddHostAlias makes alias (which must pass tenant.ValidateHost) a further
// host of community id. An alias that is already a host or an alias is
// store.ErrCommunityExists; an unknown id is store.ErrNoCommunity.
func (s *Store) AddHostAlias(ctx context.Context, alias string, id tenant.CommunityID) error {
	if err := tenant.ValidateHost(alias); err != nil {
		return fmt.Errorf("%w: %w", store.ErrInvalidHost, err)
	}
	u := id.UUID()
	var outcome error
	callerCtx := ctx
	err := s.submit(ctx, func(w *writer) error {
		ctx := w.ctx
		outcome = nil
		if _, err := findByHost(ctx, w.conn, alias); err == nil {
			outcome = store.ErrCommunityExists
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return internal("add host alias", err)
		}
		row, err := scanCommunity(w.conn.QueryRowContext(ctx, `SELECT `+communityCols+` FROM communities WHERE id = ?`, u[:]))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			outcome = store.ErrNoCommunity
			return nil
		case err != nil:
			return internal("add host alias", err)
		}
		if _, err := w.conn.ExecContext(ctx, `INSERT INTO community_host_aliases (host, community, created_at) VALUES (?, ?, ?)`,
			alias, row.seq, time.Now().Unix()); err != nil {
			return internal("add host alias", err)
		}
		return w.appendAudit(row.seq, row.c.ID, store.OperatorAudit(callerCtx, store.AuditAliasAdded, row.c, map[string]any{"alias": alias}))
	})
	if err == nil {
		err = outcome
	}
	return err
}

// Communities lists every community of the registry, archived ones
// included, oldest first (for the local admin CLI).
func (s *Store) Communities(ctx context.Context) ([]store.Community, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+communityCols+` FROM communities ORDER BY created_at, seq`)
	if err != nil {
		return nil, internal("communities", err)
	}
	defer rows.Close()
	out := []store.Community{}
	for rows.Next() {
		row, err := scanCommunity(rows)
		if err != nil {
			return nil, internal("communities", err)
		}
		out = append(out, row.c)
	}
	if err := rows.Err(); err != nil {
		return nil, internal("communities", err)
	}
	return out, nil
}
