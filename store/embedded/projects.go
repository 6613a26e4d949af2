package embedded

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var (
	_ store.ProjectStore  = (*Store)(nil)
	_ store.RepoNameStore = (*Store)(nil)
)

// ApplyProjectChange implements store.ProjectStore. The single writer
// runs the receipt check, the head read and the write of what
// store.DecideProjectChange decided as one step, so no other change of the
// project interleaves.
func (s *Store) ApplyProjectChange(ctx context.Context, c tenant.CommunityID, ch store.ProjectChange) (store.ProjectChangeResult, error) {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return store.ProjectChangeResult{}, err
	}
	var res store.ProjectChangeResult
	err = s.submit(ctx, func(w *writer) error {
		var rev int64
		err := w.conn.QueryRowContext(w.ctx, `SELECT revision FROM project_change_receipts WHERE community = ? AND event_id = ?`,
			cseq, ch.EventID).Scan(&rev)
		if err == nil {
			res = store.ProjectChangeResult{Status: store.ProjectChangeDuplicate, Revision: rev}
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return internal("project change", err)
		}
		var (
			h       store.ProjectHead
			related string
		)
		err = w.conn.QueryRowContext(w.ctx, `SELECT revision, identity, related FROM project_heads
WHERE community = ? AND owner = ? AND d = ?`, cseq, ch.Owner, ch.D).Scan(&h.Revision, &h.Identity, &related)
		switch {
		case err == nil:
			h.Exists = true
			if related != "" {
				h.Related = strings.Split(related, "\n")
			}
		case !errors.Is(err, sql.ErrNoRows):
			return internal("project change", err)
		}
		next, changed, r := store.DecideProjectChange(h, ch)
		res = r
		if changed {
			if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO project_heads (community, owner, d, revision, identity, related)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (community, owner, d) DO UPDATE SET revision = excluded.revision, identity = excluded.identity, related = excluded.related`,
				cseq, ch.Owner, ch.D, next.Revision, next.Identity, strings.Join(next.Related, "\n")); err != nil {
				return internal("project change", err)
			}
		}
		if r.Status == store.ProjectChangeApplied {
			if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO project_change_receipts (community, event_id, owner, d, revision)
VALUES (?, ?, ?, ?, ?)`, cseq, ch.EventID, ch.Owner, ch.D, r.Revision); err != nil {
				return internal("project change", err)
			}
		}
		return nil
	})
	if err != nil {
		return store.ProjectChangeResult{}, err
	}
	return res, nil
}

// ReserveRepoName implements store.RepoNameStore; the single writer makes
// the holder check, the count and the insert one step.
func (s *Store) ReserveRepoName(ctx context.Context, c tenant.CommunityID, name, owner string, limit int) (store.RepoReservation, error) {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return 0, err
	}
	var out store.RepoReservation
	err = s.submit(ctx, func(w *writer) error {
		var holder string
		err := w.conn.QueryRowContext(w.ctx, `SELECT owner FROM repo_names WHERE community = ? AND name = ?`, cseq, name).Scan(&holder)
		switch {
		case err == nil && holder == owner:
			out = store.RepoAlreadyOwned
			return nil
		case err == nil:
			out = store.RepoTakenByOther
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return internal("reserve repository name", err)
		}
		var n int
		if err := w.conn.QueryRowContext(w.ctx, `SELECT count(*) FROM repo_names WHERE community = ? AND owner = ?`, cseq, owner).Scan(&n); err != nil {
			return internal("reserve repository name", err)
		}
		if n >= limit {
			out = store.RepoQuotaExceeded
			return nil
		}
		if _, err := w.conn.ExecContext(w.ctx, `INSERT INTO repo_names (community, name, owner) VALUES (?, ?, ?)`, cseq, name, owner); err != nil {
			return internal("reserve repository name", err)
		}
		out = store.RepoReserved
		return nil
	})
	return out, err
}

// ReleaseRepoName implements store.RepoNameStore.
func (s *Store) ReleaseRepoName(ctx context.Context, c tenant.CommunityID, name, owner string) error {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return err
	}
	return s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, `DELETE FROM repo_names WHERE community = ? AND name = ? AND owner = ?`, cseq, name, owner); err != nil {
			return internal("release repository name", err)
		}
		return nil
	})
}
