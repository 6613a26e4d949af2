package buzz

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// The reads and writes of HTTP requests through the seam (Host.QueryHTTP,
// CountHTTP, IngestHTTP): a REQ's, a COUNT's and an EVENT's rules for the
// one authenticated caller, with the request standing for a connection.

// Cursor is a position in the order of Host.QueryHTTP (created_at
// descending, then id ascending): the events after the last event of the
// previous page. The zero Cursor is the start.
type Cursor struct {
	// Until, when not nil, is the created_at of the last event of the
	// previous page.
	Until *int64
	// BeforeID, with Until, is that event's id: of the events created at
	// *Until, only those whose id is greater follow it. "" leaves only
	// the Until bound.
	BeforeID string
}

// httpReadAccess arms the trace of an HTTP read by pubkey and decides it
// as a REQ's: the embedder's filter policies, bans, the community policy,
// channels. On a refusal or an error the trace is ended.
func (r *Relay) httpReadAccess(ctx context.Context, req *http.Request, tc tenant.TenantContext, pubkey, seam string, filters []nostr.Filter) (scope channel.Scope, rt readTrace, reason string, err error) {
	rt = r.armHTTPRead(tc, pubkey, seam)
	if reason = r.filterPolicyRefusal(r.httpConn(ctx, req, pubkey), tc, filters); reason != "" {
		rt.refuse(ctx, reason)
		return scope, rt, reason, nil
	}
	scope, reason, _, err = r.readAccess(ctx, tc.Community(), []string{pubkey}, r.signerReader(ctx, tc.Community(), pubkey), filters, rt.channelCheck(ctx, tc))
	if err != nil {
		rt.refuse(ctx, msgInternal)
		return scope, rt, "", fmt.Errorf("buzz: HTTP read access: %w", err)
	}
	if reason != "" {
		rt.refuse(ctx, reason)
	}
	return scope, rt, reason, nil
}

// httpReadFailed turns the failure of an HTTP read into QueryHTTP's
// answer: the deadline's refusal when it ran past Limits.QueryTimeout, err
// otherwise.
func (r *Relay) httpReadFailed(ctx context.Context, rt readTrace, what string, err error) (string, error) {
	rt.failed(ctx)
	if ctx.Err() == nil && errors.Is(err, errQueryTimeout) {
		r.log.InfoContext(ctx, "buzz: "+what+" timed out", "err", err)
		return fmt.Sprintf(msgQueryTimeout, r.cfg.limits.QueryTimeout), nil
	}
	return "", fmt.Errorf("buzz: %s: %w", what, err)
}

func (r *Relay) queryHTTP(ctx context.Context, req *http.Request, tc tenant.TenantContext, pubkey string, filters []nostr.Filter, cur Cursor) ([]store.Record, string, error) {
	scope, rt, reason, err := r.httpReadAccess(ctx, req, tc, pubkey, "req", filters)
	if err != nil || reason != "" {
		return nil, reason, err
	}
	defer rt.done(ctx)
	// Each filter's page is one bounded read (read.go): in turn in the
	// relay's fair queue, the client's address standing for its
	// connection, under the query deadline.
	readers := []string{pubkey}
	owner := r.ClientAddr(req)
	recs := make(map[string]store.Record)
	var rows *[]tenant.CommunityID // the communities of each filter's rows, when tracing
	if rt.g != nil {
		rows = new([]tenant.CommunityID)
	}
	for i := range filters {
		if rows != nil {
			*rows = (*rows)[:0]
		}
		err := r.bounded(ctx, tc.Community(), owner, func(ctx context.Context) error {
			return r.queryPage(ctx, tc.Community(), filters[i], scope, readers, cur, recs, rows)
		})
		if rows != nil {
			rt.rows(ctx, &filters[i], *rows)
		}
		if err != nil {
			reason, err := r.httpReadFailed(ctx, rt, "HTTP query", err)
			return nil, reason, err
		}
	}
	out := make([]store.Record, 0, len(recs))
	for _, rec := range recs {
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b store.Record) int {
		if a.CreatedAt != b.CreatedAt {
			if a.CreatedAt > b.CreatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, "", nil
}

// queryPage adds to recs the events of one filter on the page after cur,
// at most the filter's clamped limit of them, under the same rules as a
// REQ's replay.
//
// rows, when not nil, receives the community of every row taken (tracing).
func (r *Relay) queryPage(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope, readers []string, cur Cursor, recs map[string]store.Record, rows *[]tenant.CommunityID) error {
	if f.LimitSet && f.Limit == 0 {
		return nil
	}
	maxLimit := r.cfg.limits.MaxLimit
	if !f.LimitSet || f.Limit > maxLimit {
		f.Limit, f.LimitSet = maxLimit, true
	}
	f, gated, ok := channel.GiftWrapQuery(f, readers)
	if !ok {
		return nil
	}
	want := f.Limit
	n := 0
	take := func(q nostr.Filter, skipThrough string) error {
		for rec, err := range r.queryScoped(ctx, c, q, scope) {
			if err != nil {
				return err
			}
			if n >= want {
				return nil
			}
			if skipThrough != "" && rec.ID <= skipThrough {
				continue
			}
			if gated && !channel.GiftWrapVisibleRaw(rec.Raw, readers) {
				continue
			}
			recs[rec.ID] = rec
			if rows != nil {
				*rows = append(*rows, rec.Community)
			}
			n++
		}
		return nil
	}
	if cur.Until == nil {
		return take(f, "")
	}
	until := *cur.Until
	if f.Until != nil && *f.Until < until {
		until = *f.Until
	}
	if cur.BeforeID != "" && until == *cur.Until {
		// The rest of the cursor's second: ids after the last one. The
		// store returns one second's events in id order, at most MaxLimit
		// of them: a second holding more (of this filter) than that may
		// give a short page.
		if f.Since == nil || *f.Since <= until {
			q := f
			q.Since, q.Until = &until, &until
			q.Limit = maxLimit
			if err := take(q, cur.BeforeID); err != nil || n >= want {
				return err
			}
		}
		until--
	}
	if f.Since != nil && *f.Since > until {
		return nil
	}
	q := f
	q.Until = &until
	q.Limit = want - n
	return take(q, "")
}

func (r *Relay) countHTTP(ctx context.Context, req *http.Request, tc tenant.TenantContext, pubkey string, filters []nostr.Filter) (int64, string, error) {
	scope, rt, reason, err := r.httpReadAccess(ctx, req, tc, pubkey, "count", filters)
	if err != nil || reason != "" {
		return 0, reason, err
	}
	defer rt.done(ctx)
	owner := r.ClientAddr(req)
	n, err := channel.CountGiftWrapped(ctx, filters, []string{pubkey}, func(ctx context.Context, sets [][]nostr.Filter) ([]int64, error) {
		return r.countBounded(ctx, tc.Community(), owner, sets, scope)
	})
	if err != nil {
		reason, err := r.httpReadFailed(ctx, rt, "HTTP count", err)
		return 0, reason, err
	}
	// A count carries no rows; each filter's read is recorded empty.
	for i := range filters {
		rt.rows(ctx, &filters[i], nil)
	}
	return n, "", nil
}

func (r *Relay) ingestHTTP(ctx context.Context, req *http.Request, tc tenant.TenantContext, caller HTTPCaller, ev *nostr.Event) (bool, string) {
	if ev.Kind == nostr.KindPresence {
		return false, msgPresenceHTTP
	}
	if reason := r.checkCaller(ctx, tc, caller, apitoken.ScopeForEvent(ev)); reason != "" {
		return false, reason
	}
	return r.submit(r.httpConn(ctx, req, caller.PubKey), tc, ev, []string{caller.PubKey})
}
