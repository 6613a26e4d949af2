package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/tenant"
)

// TierFunc picks the rate-limit tier of an event's author in a community
// (for example from a role table). A nil TierFunc gives everyone
// ratelimit.TierHuman.
type TierFunc func(ctx context.Context, tc tenant.TenantContext, pubkey string) ratelimit.Tier

// RateLimitTimeout bounds one admission decision: a limiter that does not
// answer in time counts as unavailable, and the event is refused.
const RateLimitTimeout = time.Second

// admit asks the configured limiter whether who (s's author, or for a gift
// wrap the connection's key: principal) may publish one more event in its
// community now (class ratelimit.ClassEvent). It returns "" to
// admit, else the OK message: the limiter's "rate-limited: …" reason over
// quota, ratelimit.ErrUnavailable's text when the limiter cannot decide, and
// MsgInternal for any other limiter error. It never admits on error.
func (p *Pipeline) admit(ctx context.Context, s Submission, who string) string {
	if p.cfg.RateLimiter == nil {
		return ""
	}
	key := ratelimit.Key{Community: s.Tenant.Community(), PubKey: who, Class: ratelimit.ClassEvent}
	if p.cfg.RateLimitTier != nil {
		key.Tier = p.cfg.RateLimitTier(ctx, s.Tenant, who)
	}
	lctx, cancel := context.WithTimeout(ctx, RateLimitTimeout)
	defer cancel()
	d, err := p.cfg.RateLimiter.Allow(lctx, key)
	switch {
	case err == nil && d.Allowed:
		return ""
	case err == nil:
		reason := d.Reason()
		if p.cfg.OnRateLimited != nil {
			p.cfg.OnRateLimited(ctx, s.Tenant, s.Event, reason)
		}
		return reason
	case errors.Is(err, ratelimit.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		// The text of the sentinel only: the wrapped cause may name
		// internal addresses.
		p.cfg.Logger.WarnContext(ctx, "ingest: rate limiter unavailable",
			"community", s.Tenant.Community().String(), "err", err)
		return ratelimit.ErrUnavailable.Error()
	default:
		p.cfg.Logger.ErrorContext(ctx, "ingest: rate limiter",
			"community", s.Tenant.Community().String(), "err", err)
		return MsgInternal
	}
}
