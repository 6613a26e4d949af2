package buzz

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Refusal auditing: how rate-limit refusals reach the audit chains.
const (
	// refusalFlushInterval is how often coalesced refusals are appended.
	refusalFlushInterval = time.Second
	// maxRefusalTallies bounds the (community, author) pairs held between
	// flushes; refusals of further pairs are counted and logged, not
	// recorded.
	maxRefusalTallies = 4096
)

// refusalAudit records rate-limit refusals in the communities' audit
// chains, coalesced: one audit.RateLimited entry per (community, author)
// per flush interval, with how many events were refused. A flood of
// refused events therefore costs one batched append per community per
// interval, never one database write per event, and the ingest path only
// takes a mutex. Refusals change nothing, so a crash loses at most one
// interval of them — unlike changes, whose entries commit with them.
type refusalAudit struct {
	log    store.AuditLog
	logger *slog.Logger

	mu      sync.Mutex
	pending map[refusalKey]*refusalTally
	dropped int64
}

type refusalKey struct {
	c      tenant.CommunityID
	pubkey string
}

type refusalTally struct {
	n      int64
	first  time.Time
	kind   int
	reason string
}

func newRefusalAudit(log store.AuditLog, logger *slog.Logger) *refusalAudit {
	return &refusalAudit{log: log, logger: logger, pending: map[refusalKey]*refusalTally{}}
}

// rateLimited is the ingest.Config.OnRateLimited hook.
func (a *refusalAudit) rateLimited(_ context.Context, tc tenant.TenantContext, ev *nostr.Event, reason string) {
	k := refusalKey{tc.Community(), ev.PubKey}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.pending[k]; ok {
		t.n++
		return
	}
	if len(a.pending) >= maxRefusalTallies {
		a.dropped++
		return
	}
	a.pending[k] = &refusalTally{n: 1, first: time.Now(), kind: ev.Kind, reason: reason}
}

// run flushes every refusalFlushInterval until ctx ends, then once more.
func (a *refusalAudit) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(refusalFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			a.flush(fctx)
			cancel()
			return
		case <-t.C:
			a.flush(ctx)
		}
	}
}

// flush appends what accumulated: one AppendAudit (one batch) per community.
func (a *refusalAudit) flush(ctx context.Context) {
	a.mu.Lock()
	pending, dropped := a.pending, a.dropped
	if len(pending) == 0 && dropped == 0 {
		a.mu.Unlock()
		return
	}
	a.pending, a.dropped = map[refusalKey]*refusalTally{}, 0
	a.mu.Unlock()
	if dropped > 0 {
		a.logger.WarnContext(ctx, "buzz: rate-limit refusals not audited (too many distinct authors in one interval)", "refusals", dropped)
	}
	byCommunity := map[tenant.CommunityID][]audit.Record{}
	for k, t := range pending {
		byCommunity[k.c] = append(byCommunity[k.c], audit.Record{
			Action: audit.RateLimited, Actor: k.pubkey, Time: t.first,
			Detail: map[string]any{"refused": t.n, "kind": t.kind, "reason": t.reason},
		})
	}
	for c, recs := range byCommunity {
		if err := a.log.AppendAudit(ctx, c, recs...); err != nil {
			a.logger.ErrorContext(ctx, "buzz: auditing rate-limit refusals", "community", c.String(), "entries", len(recs), "err", err)
		}
	}
}

// refusalHook returns the ingest hook that audits rate-limit refusals, or
// nil when the store keeps no audit chains or no rate limiter is set.
func (r *Relay) refusalHook() func(context.Context, tenant.TenantContext, *nostr.Event, string) {
	log, ok := r.cfg.store.(store.AuditLog)
	if !ok || r.cfg.cluster.limiter == nil {
		return nil
	}
	r.refusals = newRefusalAudit(log, r.log)
	return r.refusals.rateLimited
}
