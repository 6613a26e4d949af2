package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The operator plane: provisioning, quotas, archiving, ownership and host
// aliases (see operator.Store for the contract). Calls that count an
// owner's communities first take a transaction-scoped advisory lock on that
// owner, so the count and the write it guards are atomic across processes;
// calls that change one community lock its row (SELECT … FOR UPDATE).

const communityCols = `id, host, owner_pubkey, created_at, archived_at`

func scanCommunity(r pgx.Row) (store.Community, error) {
	var (
		id       [16]byte
		c        store.Community
		owner    []byte
		archived *time.Time
	)
	if err := r.Scan(&id, &c.Host, &owner, &c.CreatedAt, &archived); err != nil {
		return store.Community{}, err
	}
	c.ID = tenant.FromUUID(id)
	c.CreatedAt = c.CreatedAt.UTC()
	if owner != nil {
		if len(owner) != 32 {
			return store.Community{}, fmt.Errorf("postgres: corrupt owner key (%d bytes)", len(owner))
		}
		c.OwnerPubKey = hex.EncodeToString(owner)
	}
	if archived != nil {
		c.ArchivedAt = archived.UTC()
	}
	return c, nil
}

// ownerKey decodes an owner key; "" is nil (SQL NULL).
func ownerKey(pubkey string) ([]byte, error) {
	if pubkey == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(pubkey)
	if err != nil || len(b) != 32 || hex.EncodeToString(b) != pubkey {
		return nil, errors.New("postgres: owner key must be 64 lowercase hex characters")
	}
	return b, nil
}

// lockOwner serializes, until the transaction ends, every call that counts
// or changes the communities of owner.
func lockOwner(ctx context.Context, tx pgx.Tx, owner []byte) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('buzz owner ' || encode($1::bytea, 'hex'), 0))`, owner)
	return err
}

// lockHost serializes, until the transaction ends, every call that maps
// host (as a primary host or an alias). Callers that also lock an owner take
// the owner lock first.
func lockHost(ctx context.Context, tx pgx.Tx, host string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('buzz host ' || lower($1), 0))`, host)
	return err
}

func countOwned(ctx context.Context, tx pgx.Tx, owner []byte) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM communities WHERE owner_pubkey = $1 AND archived_at IS NULL`, owner).Scan(&n)
	return n, err
}

// byHost selects the community whose host or alias is $1, archived or not.
const byHost = `
SELECT ` + communityCols + ` FROM communities WHERE lower(host) = lower($1)
UNION ALL
SELECT c.id, c.host, c.owner_pubkey, c.created_at, c.archived_at
FROM community_host_aliases a JOIN communities c ON c.id = a.community_id WHERE lower(a.host) = lower($1)
LIMIT 1`

// queueOperatorAudit records an operator action on community c inside tx
// (binding tx to c first).
func queueOperatorAudit(ctx context.Context, tx pgx.Tx, action audit.Action, c store.Community, detail map[string]any) error {
	if _, err := tx.Exec(ctx, setCommunitySQL, c.ID.String()); err != nil {
		return err
	}
	return queueAudit(ctx, tx, c.ID, store.OperatorAudit(ctx, action, c, detail))
}

// inTx runs fn in a transaction, committing when it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// CreateCommunity implements operator.Store.
func (s *Store) CreateCommunity(ctx context.Context, n store.NewCommunity) (store.Community, bool, error) {
	if err := tenant.ValidateHost(n.Host); err != nil {
		return store.Community{}, false, fmt.Errorf("%w: %w", store.ErrInvalidHost, err)
	}
	owner, err := ownerKey(n.OwnerPubKey)
	if err != nil {
		return store.Community{}, false, err
	}
	var (
		c       store.Community
		created bool
		outcome error
	)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		outcome, created = nil, false
		if owner != nil {
			if err := lockOwner(ctx, tx, owner); err != nil {
				return err
			}
		}
		if err := lockHost(ctx, tx, n.Host); err != nil {
			return err
		}
		existing := func(cur store.Community) error {
			switch {
			case n.CreateOnly:
				outcome = store.ErrCommunityExists
			case n.OwnerPubKey != "" && cur.OwnerPubKey != n.OwnerPubKey:
				outcome = store.ErrOwnerConflict
			default:
				c = cur
			}
			return nil
		}
		cur, err := scanCommunity(tx.QueryRow(ctx, byHost, n.Host))
		switch {
		case err == nil:
			return existing(cur)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if owner != nil && n.MaxPerOwner > 0 {
			cnt, err := countOwned(ctx, tx, owner)
			if err != nil {
				return err
			}
			if cnt >= n.MaxPerOwner {
				outcome = store.ErrCommunityLimit
				return nil
			}
		}
		fresh := tenant.NewCommunityID()
		c, err = scanCommunity(tx.QueryRow(ctx, `
INSERT INTO communities (id, host, owner_pubkey) VALUES ($1, $2, $3)
ON CONFLICT ((lower(host))) DO NOTHING
RETURNING `+communityCols, fresh.UUID(), n.Host, owner))
		switch {
		case err == nil:
			created = true
			return queueOperatorAudit(ctx, tx, audit.CommunityProvisioned, c, nil)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		// Another process inserted the host after our check: a fresh
		// statement (read committed) sees its row.
		cur, err = scanCommunity(tx.QueryRow(ctx, byHost, n.Host))
		if err != nil {
			return err
		}
		return existing(cur)
	})
	if err != nil {
		return store.Community{}, false, fmt.Errorf("postgres: create community: %w", err)
	}
	if outcome != nil {
		return store.Community{}, false, outcome
	}
	if created {
		s.audit.pending(c.ID)
	}
	return c, created, nil
}

// OwnedCommunities implements operator.Store.
func (s *Store) OwnedCommunities(ctx context.Context, ownerPubKey string) ([]store.Community, error) {
	owner, err := ownerKey(ownerPubKey)
	if err != nil {
		return nil, err
	}
	if owner == nil {
		return nil, errors.New("postgres: owned communities: empty owner key")
	}
	rows, err := s.pool.Query(ctx, `SELECT `+communityCols+` FROM communities
WHERE owner_pubkey = $1 ORDER BY created_at, id`, owner)
	if err != nil {
		return nil, fmt.Errorf("postgres: owned communities: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Community, error) { return scanCommunity(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: owned communities: %w", err)
	}
	if out == nil {
		out = []store.Community{}
	}
	return out, nil
}

// CommunityByHost implements operator.Store.
func (s *Store) CommunityByHost(ctx context.Context, normalizedHost string) (store.Community, error) {
	c, err := scanCommunity(s.pool.QueryRow(ctx, byHost, normalizedHost))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.Community{}, store.ErrNoCommunity
	case err != nil:
		return store.Community{}, fmt.Errorf("postgres: community by host: %w", err)
	}
	return c, nil
}

// CommunityByID returns the community with id, archived or not;
// store.ErrNoCommunity when there is none.
func (s *Store) CommunityByID(ctx context.Context, id tenant.CommunityID) (store.Community, error) {
	c, err := scanCommunity(s.pool.QueryRow(ctx, `SELECT `+communityCols+` FROM communities WHERE id = $1`, id.UUID()))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.Community{}, store.ErrNoCommunity
	case err != nil:
		return store.Community{}, fmt.Errorf("postgres: community by id: %w", err)
	}
	return c, nil
}

// lockCommunity reads community id FOR UPDATE; store.ErrNoCommunity when
// there is none.
func lockCommunity(ctx context.Context, tx pgx.Tx, id [16]byte) (store.Community, error) {
	c, err := scanCommunity(tx.QueryRow(ctx, `SELECT `+communityCols+` FROM communities WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Community{}, store.ErrNoCommunity
	}
	return c, err
}

// SetArchived implements operator.Store.
func (s *Store) SetArchived(ctx context.Context, id tenant.CommunityID, ownerPubKey string, archived bool, maxPerOwner int) (store.Community, bool, error) {
	owner, err := ownerKey(ownerPubKey)
	if err != nil {
		return store.Community{}, false, err
	}
	var (
		c       store.Community
		changed bool
		outcome error
	)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		outcome, changed = nil, false
		if owner != nil {
			if err := lockOwner(ctx, tx, owner); err != nil {
				return err
			}
		}
		cur, err := lockCommunity(ctx, tx, id.UUID())
		switch {
		case errors.Is(err, store.ErrNoCommunity):
			outcome = err
			return nil
		case err != nil:
			return err
		}
		if cur.OwnerPubKey != ownerPubKey {
			outcome = store.ErrOwnerConflict
			return nil
		}
		if cur.Archived() == archived {
			c = cur
			return nil
		}
		if !archived && owner != nil && maxPerOwner > 0 {
			cnt, err := countOwned(ctx, tx, owner)
			if err != nil {
				return err
			}
			if cnt >= maxPerOwner {
				outcome = store.ErrCommunityLimit
				return nil
			}
		}
		c, err = scanCommunity(tx.QueryRow(ctx, `UPDATE communities
SET archived_at = CASE WHEN $2::boolean THEN now() END WHERE id = $1
RETURNING `+communityCols, id.UUID(), archived))
		if err != nil {
			return err
		}
		changed = true
		action := audit.CommunityArchived
		if !archived {
			action = audit.CommunityUnarchived
		}
		return queueOperatorAudit(ctx, tx, action, c, nil)
	})
	if err != nil {
		return store.Community{}, false, fmt.Errorf("postgres: archive community: %w", err)
	}
	if outcome != nil {
		return store.Community{}, false, outcome
	}
	if changed {
		s.audit.pending(c.ID)
	}
	return c, changed, nil
}

// TransferCommunity implements operator.Store.
func (s *Store) TransferCommunity(ctx context.Context, id [16]byte, newOwner, expectedOwner string, maxPerOwner int) (store.Community, string, bool, error) {
	next, err := ownerKey(newOwner)
	if err != nil {
		return store.Community{}, "", false, err
	}
	if next == nil {
		return store.Community{}, "", false, errors.New("postgres: transfer community: empty new owner")
	}
	if _, err := ownerKey(expectedOwner); err != nil {
		return store.Community{}, "", false, err
	}
	var (
		c        store.Community
		previous string
		changed  bool
		outcome  error
	)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		outcome, changed = nil, false
		if err := lockOwner(ctx, tx, next); err != nil {
			return err
		}
		cur, err := lockCommunity(ctx, tx, id)
		switch {
		case errors.Is(err, store.ErrNoCommunity):
			outcome = err
			return nil
		case err != nil:
			return err
		}
		previous = cur.OwnerPubKey
		if cur.OwnerPubKey == newOwner {
			c = cur
			return nil
		}
		if cur.OwnerPubKey != expectedOwner {
			outcome = store.ErrOwnerConflict
			return nil
		}
		if !cur.Archived() && maxPerOwner > 0 {
			cnt, err := countOwned(ctx, tx, next)
			if err != nil {
				return err
			}
			if cnt >= maxPerOwner {
				outcome = store.ErrCommunityLimit
				return nil
			}
		}
		c, err = scanCommunity(tx.QueryRow(ctx, `UPDATE communities SET owner_pubkey = $2 WHERE id = $1
RETURNING `+communityCols, id, next))
		if err != nil {
			return err
		}
		changed = true
		return queueOperatorAudit(ctx, tx, audit.CommunityTransferred, c, map[string]any{"previous_owner": previous})
	})
	if err != nil {
		return store.Community{}, "", false, fmt.Errorf("postgres: transfer community: %w", err)
	}
	if outcome != nil {
		return store.Community{}, "", false, outcome
	}
	if changed {
		s.audit.pending(c.ID)
	}
	return c, previous, changed, nil
}

// AddHostAlias makes alias (which must pass tenant.ValidateHost) a further
// host of community id. An alias that is already a host or an alias is
// store.ErrCommunityExists; an unknown id is store.ErrNoCommunity.
func (s *Store) AddHostAlias(ctx context.Context, alias string, id tenant.CommunityID) error {
	if err := tenant.ValidateHost(alias); err != nil {
		return fmt.Errorf("%w: %w", store.ErrInvalidHost, err)
	}
	var outcome error
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		outcome = nil
		// Hosts and aliases live in two unique indexes; serialize alias
		// creation on the host so the cross-table check holds.
		if err := lockHost(ctx, tx, alias); err != nil {
			return err
		}
		if _, err := scanCommunity(tx.QueryRow(ctx, byHost, alias)); err == nil {
			outcome = store.ErrCommunityExists
			return nil
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		c, err := lockCommunity(ctx, tx, id.UUID())
		if errors.Is(err, store.ErrNoCommunity) {
			outcome = err
			return nil
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO community_host_aliases (host, community_id) VALUES ($1, $2)`, alias, id.UUID()); err != nil {
			return err
		}
		return queueOperatorAudit(ctx, tx, store.AuditAliasAdded, c, map[string]any{"alias": alias})
	})
	if err != nil {
		return fmt.Errorf("postgres: add host alias: %w", err)
	}
	if outcome == nil {
		s.audit.pending(id)
	}
	return outcome
}

// Communities lists every community of the registry, archived ones
// included, oldest first (for the local admin CLI).
func (s *Store) Communities(ctx context.Context) ([]store.Community, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+communityCols+` FROM communities ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: communities: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Community, error) { return scanCommunity(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: communities: %w", err)
	}
	if out == nil {
		out = []store.Community{}
	}
	return out, nil
}
