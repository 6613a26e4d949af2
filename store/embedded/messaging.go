package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

var (
	_ store.CommunityKindsStore = (*Store)(nil)
	_ store.AgentOwnerStore     = (*Store)(nil)
)

// CommunityKinds implements store.CommunityKindsStore.
func (s *Store) CommunityKinds(ctx context.Context, c tenant.CommunityID) (string, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return "", store.ErrNoCommunity
	}
	if err != nil {
		return "", err
	}
	var k string
	if err := s.rdb.QueryRowContext(ctx, `SELECT kind_allowlist FROM communities WHERE seq = ?`, cseq).Scan(&k); err != nil {
		return "", internal("community kinds", err)
	}
	return k, nil
}

// SetCommunityKinds implements store.CommunityKindsStore.
func (s *Store) SetCommunityKinds(ctx context.Context, c tenant.CommunityID, kinds string) error {
	if len(kinds) > store.MaxKindsSetting {
		return fmt.Errorf("sqlite: kind allow-list setting over %d bytes", store.MaxKindsSetting)
	}
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return store.ErrNoCommunity
	}
	if err != nil {
		return err
	}
	return s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, `UPDATE communities SET kind_allowlist = ? WHERE seq = ?`, kinds, cseq); err != nil {
			return internal("set community kinds", err)
		}
		return w.appendAudit(cseq, c, audit.Record{Action: audit.CommunityPolicyChanged, Actor: audit.ActorFrom(ctx),
			Detail: map[string]any{"kinds": kinds}})
	})
}

// RecordAgentOwner implements store.AgentOwnerStore. The single writer
// makes the insert-or-read atomic.
func (s *Store) RecordAgentOwner(ctx context.Context, c tenant.CommunityID, agent, owner string, at time.Time) (store.AgentOwner, bool, error) {
	cseq, err := s.communitySeq(ctx, c)
	if err != nil {
		return store.AgentOwner{}, false, err
	}
	var (
		got      store.AgentOwner
		recorded bool
	)
	err = s.submit(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(w.ctx, `INSERT INTO agent_owners (community, agent, owner, recorded_at)
VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, cseq, agent, owner, at.Unix())
		if err != nil {
			return internal("record agent owner", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return internal("record agent owner", err)
		} else if n == 1 {
			got, recorded = store.AgentOwner{Owner: owner, RecordedAt: time.Unix(at.Unix(), 0)}, true
			return nil
		}
		var ts int64
		if err := w.conn.QueryRowContext(w.ctx, `SELECT owner, recorded_at FROM agent_owners WHERE community = ? AND agent = ?`,
			cseq, agent).Scan(&got.Owner, &ts); err != nil {
			return internal("record agent owner", err)
		}
		got.RecordedAt = time.Unix(ts, 0)
		return nil
	})
	return got, recorded, err
}

// AgentOwnerOf implements store.AgentOwnerStore.
func (s *Store) AgentOwnerOf(ctx context.Context, c tenant.CommunityID, agent string) (store.AgentOwner, bool, error) {
	cseq, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return store.AgentOwner{}, false, nil
	}
	if err != nil {
		return store.AgentOwner{}, false, err
	}
	var (
		o  store.AgentOwner
		ts int64
	)
	err = s.rdb.QueryRowContext(ctx, `SELECT owner, recorded_at FROM agent_owners WHERE community = ? AND agent = ?`, cseq, agent).Scan(&o.Owner, &ts)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.AgentOwner{}, false, nil
	case err != nil:
		return store.AgentOwner{}, false, internal("agent owner", err)
	}
	o.RecordedAt = time.Unix(ts, 0)
	return o, true, nil
}
