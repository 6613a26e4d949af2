// Package ratelimittest is the conformance suite of ratelimit.Limiter
// implementations: what ratelimit.Memory and redislimit.Limiter share, for
// any other limiter to be checked against. It imports ratelimit, tenant and
// the standard library only.
package ratelimittest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/tenant"
)

// Two valid pubkeys.
var (
	PubKey1 = strings.Repeat("a1", 32)
	PubKey2 = strings.Repeat("b2", 32)
)

// MustAllow calls l.Allow(k), fails tb on an error or when the decision is
// not want, and returns the decision.
func MustAllow(tb testing.TB, l ratelimit.Limiter, k ratelimit.Key, want bool) ratelimit.Decision {
	tb.Helper()
	d, err := l.Allow(context.Background(), k)
	if err != nil {
		tb.Fatalf("Allow: %v", err)
	}
	if d.Allowed != want {
		tb.Fatalf("Allow(%s/%s) = %v, want %v", k.PubKey[:4], k.Class, d.Allowed, want)
	}
	return d
}

// Run checks the limiter newLimiter returns for a set of small tiers
// (human: 3 messages and 1 API call per minute; platform: 5 messages):
// limits, remaining counts and retry times, independence of communities,
// pubkeys and classes, the fallback of a tier to the human rule, and the
// refusal of invalid keys (ratelimit.ErrInvalidKey) and of classes without
// a rule (ratelimit.ErrNoRule).
func Run(t *testing.T, newLimiter func(ratelimit.Tiers) ratelimit.Limiter) {
	l := newLimiter(ratelimit.Tiers{
		ratelimit.TierHuman:    {ratelimit.ClassMessage: {Limit: 3, Window: time.Minute}, ratelimit.ClassAPI: {Limit: 1, Window: time.Minute}},
		ratelimit.TierPlatform: {ratelimit.ClassMessage: {Limit: 5, Window: time.Minute}},
	})
	c1, c2 := tenant.NewCommunityID(), tenant.NewCommunityID()
	pk1, pk2 := PubKey1, PubKey2
	msg, api := ratelimit.ClassMessage, ratelimit.ClassAPI
	k := ratelimit.Key{Community: c1, PubKey: pk1, Class: msg}
	for i := 0; i < 3; i++ {
		d := MustAllow(t, l, k, true)
		if d.Limit != 3 || d.Remaining != 2-i {
			t.Fatalf("decision %d = %+v", i, d)
		}
	}
	d := MustAllow(t, l, k, false)
	if d.RetryAfter <= 0 || d.RetryAfter > time.Minute {
		t.Fatalf("RetryAfter = %v", d.RetryAfter)
	}
	if !strings.HasPrefix(d.Reason(), "rate-limited: ") {
		t.Fatalf("Reason = %q", d.Reason())
	}
	// Independent streams.
	MustAllow(t, l, ratelimit.Key{Community: c2, PubKey: pk1, Class: msg}, true)
	MustAllow(t, l, ratelimit.Key{Community: c1, PubKey: pk2, Class: msg}, true)
	MustAllow(t, l, ratelimit.Key{Community: c1, PubKey: pk1, Class: api}, true)
	MustAllow(t, l, ratelimit.Key{Community: c1, PubKey: pk1, Class: api}, false)
	// A higher tier has more room on the same usage; a class it lacks falls
	// back to the human rule.
	MustAllow(t, l, ratelimit.Key{Community: c1, PubKey: pk1, Class: msg, Tier: ratelimit.TierPlatform}, true)
	MustAllow(t, l, ratelimit.Key{Community: c1, PubKey: pk1, Class: api, Tier: ratelimit.TierPlatform}, false)

	for _, bad := range []ratelimit.Key{
		{PubKey: pk1, Class: msg},
		{Community: c1, PubKey: "AB", Class: msg},
		{Community: c1, PubKey: strings.ToUpper(pk1), Class: msg},
		{Community: c1, PubKey: pk1},
		{Community: c1, PubKey: pk1, Class: "a:b"},
	} {
		if _, err := l.Allow(context.Background(), bad); !errors.Is(err, ratelimit.ErrInvalidKey) {
			t.Fatalf("Allow(%+v) err = %v, want ErrInvalidKey", bad, err)
		}
	}
	if _, err := l.Allow(context.Background(), ratelimit.Key{Community: c1, PubKey: pk1, Class: ratelimit.ClassWS}); !errors.Is(err, ratelimit.ErrNoRule) {
		t.Fatalf("class without a rule: err = %v, want ErrNoRule", err)
	}
}
