package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var (
	_ store.ProjectStore  = (*Store)(nil)
	_ store.RepoNameStore = (*Store)(nil)
)

// ApplyProjectChange implements store.ProjectStore: one transaction that
// first takes a transaction-scoped advisory lock on the project (so every
// pod serializes changes of one project, its first one included), then
// reads the receipt and the head, and writes what
// store.DecideProjectChange decided.
func (s *Store) ApplyProjectChange(ctx context.Context, c tenant.CommunityID, ch store.ProjectChange) (store.ProjectChangeResult, error) {
	var res store.ProjectChangeResult
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('buzz project ' || $1 || ' ' || $2 || ' ' || $3, 0))`,
			c.String(), ch.Owner, ch.D); err != nil {
			return err
		}
		var rev int64
		err := tx.QueryRow(ctx, `SELECT revision FROM project_change_receipts WHERE community_id = $1 AND event_id = $2`,
			c.UUID(), ch.EventID).Scan(&rev)
		if err == nil {
			res = store.ProjectChangeResult{Status: store.ProjectChangeDuplicate, Revision: rev}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var h store.ProjectHead
		err = tx.QueryRow(ctx, `SELECT revision, identity, related FROM project_heads
WHERE community_id = $1 AND owner = $2 AND d = $3 FOR UPDATE`, c.UUID(), ch.Owner, ch.D).Scan(&h.Revision, &h.Identity, &h.Related)
		switch {
		case err == nil:
			h.Exists = true
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		next, changed, r := store.DecideProjectChange(h, ch)
		res = r
		if changed {
			if next.Related == nil {
				next.Related = []string{}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO project_heads (community_id, owner, d, revision, identity, related)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (community_id, owner, d) DO UPDATE SET revision = EXCLUDED.revision, identity = EXCLUDED.identity, related = EXCLUDED.related`,
				c.UUID(), ch.Owner, ch.D, next.Revision, next.Identity, next.Related); err != nil {
				return err
			}
		}
		if r.Status == store.ProjectChangeApplied {
			if _, err := tx.Exec(ctx, `INSERT INTO project_change_receipts (community_id, event_id, owner, d, revision)
VALUES ($1, $2, $3, $4, $5)`, c.UUID(), ch.EventID, ch.Owner, ch.D, r.Revision); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.ProjectChangeResult{}, fmt.Errorf("postgres: apply project change: %w", err)
	}
	return res, nil
}

// ReserveRepoName implements store.RepoNameStore. Advisory locks on the
// name, then on the owner's quota (always in that order), make the holder
// check, the count and the insert one decision across pods.
func (s *Store) ReserveRepoName(ctx context.Context, c tenant.CommunityID, name, owner string, limit int) (store.RepoReservation, error) {
	var out store.RepoReservation
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		for _, key := range []string{"buzz repo name " + c.String() + " " + name, "buzz repo quota " + c.String() + " " + owner} {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, key); err != nil {
				return err
			}
		}
		var holder string
		err := tx.QueryRow(ctx, `SELECT owner FROM repo_names WHERE community_id = $1 AND name = $2`, c.UUID(), name).Scan(&holder)
		switch {
		case err == nil && holder == owner:
			out = store.RepoAlreadyOwned
			return nil
		case err == nil:
			out = store.RepoTakenByOther
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM repo_names WHERE community_id = $1 AND owner = $2`, c.UUID(), owner).Scan(&n); err != nil {
			return err
		}
		if n >= limit {
			out = store.RepoQuotaExceeded
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO repo_names (community_id, name, owner) VALUES ($1, $2, $3)`, c.UUID(), name, owner)
		out = store.RepoReserved
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: reserve repository name: %w", err)
	}
	return out, nil
}

// ReleaseRepoName implements store.RepoNameStore.
func (s *Store) ReleaseRepoName(ctx context.Context, c tenant.CommunityID, name, owner string) error {
	err := s.inCommunityTx(ctx, c, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM repo_names WHERE community_id = $1 AND name = $2 AND owner = $3`, c.UUID(), name, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: release repository name: %w", err)
	}
	return nil
}
