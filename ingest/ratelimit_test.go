package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// rlEnv is a pipeline over a real embedded store and the in-process broker.
type rlEnv struct {
	p      *ingest.Pipeline
	st     *embedded.Store
	a, b   tenant.TenantContext
	broker *pubsub.Local
}

func newRLEnv(t *testing.T, l ratelimit.Limiter, tier ingest.TierFunc) *rlEnv {
	t.Helper()
	parts := newPipelineParts(t, "a.test", "b.test")
	e := &rlEnv{st: parts.st, broker: parts.br, a: parts.tcs[0], b: parts.tcs[1]}
	var err error
	if e.p, err = ingest.New(parts.config(ingest.Config{RateLimiter: l, RateLimitTier: tier})); err != nil {
		t.Fatal(err)
	}
	return e
}

func signedEvent(t *testing.T, sk nostr.SecretKey, kind int, content string) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: time.Now().Unix(), Content: content, Tags: nostr.Tags{}}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

func newSK(t *testing.T) nostr.SecretKey {
	t.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func (e *rlEnv) stored(t *testing.T, tc tenant.TenantContext, id string) bool {
	t.Helper()
	n, err := e.st.Count(context.Background(), tc.Community(), []nostr.Filter{{IDs: []string{id}}})
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestRateLimitStep(t *testing.T) {
	tiers := ratelimit.Tiers{
		ratelimit.TierHuman: {ratelimit.ClassEvent: {Limit: 3, Window: time.Hour}},
		ratelimit.TierAgent: {ratelimit.ClassEvent: {Limit: 5, Window: time.Hour}},
	}
	l, err := ratelimit.NewMemory(tiers)
	if err != nil {
		t.Fatal(err)
	}
	agentSK := newSK(t)
	agent := agentSK.PublicKey()
	e := newRLEnv(t, l, func(_ context.Context, _ tenant.TenantContext, pk string) ratelimit.Tier {
		if pk == agent {
			return ratelimit.TierAgent
		}
		return ratelimit.TierHuman
	})
	ctx := context.Background()
	sk := newSK(t)

	// A forged event costs no quota: the signature is checked first.
	forged := signedEvent(t, sk, 1, "forged")
	forged.Content = "changed"
	if out := e.p.Ingest(ctx, ingest.Submission{Tenant: e.a, Event: forged}); out.OK || !strings.HasPrefix(out.Message, "invalid:") {
		t.Fatalf("forged event: %+v", out)
	}
	for i := range 3 {
		ev := signedEvent(t, sk, 1, fmt.Sprint("ok ", i))
		if out := e.p.Ingest(ctx, ingest.Submission{Tenant: e.a, Event: ev}); !out.OK {
			t.Fatalf("event %d within quota refused: %+v", i, out)
		}
	}
	// Over quota: stored events and ephemeral ones alike are refused with
	// OK false "rate-limited: …" and nothing is stored or published.
	got := make(chan string, 8)
	stop := e.broker.Listen(func(m pubsub.Message) { got <- m.Event.ID })
	defer stop()
	for _, kind := range []int{1, 20001} {
		ev := signedEvent(t, sk, kind, "over")
		out := e.p.Ingest(ctx, ingest.Submission{Tenant: e.a, Event: ev})
		if out.OK || !strings.HasPrefix(out.Message, "rate-limited: ") {
			t.Fatalf("kind %d over quota: %+v", kind, out)
		}
		if e.stored(t, e.a, ev.ID) {
			t.Fatalf("refused event %s was stored", ev.ID)
		}
	}
	select {
	case id := <-got:
		t.Fatalf("refused event %s was published", id)
	default:
	}
	// The quota is per community and per pubkey.
	if out := e.p.Ingest(ctx, ingest.Submission{Tenant: e.b, Event: signedEvent(t, sk, 1, "other community")}); !out.OK {
		t.Fatalf("same pubkey in another community refused: %+v", out)
	}
	if out := e.p.Ingest(ctx, ingest.Submission{Tenant: e.a, Event: signedEvent(t, newSK(t), 1, "other pubkey")}); !out.OK {
		t.Fatalf("another pubkey refused: %+v", out)
	}
	// The tier function selects the rule: the agent gets 5.
	for i := range 6 {
		out := e.p.Ingest(ctx, ingest.Submission{Tenant: e.a, Event: signedEvent(t, agentSK, 1, fmt.Sprint("agent ", i))})
		if out.OK != (i < 5) {
			t.Fatalf("agent event %d: %+v", i, out)
		}
	}
}

// failingLimiter injects limiter failures.
type failingLimiter struct{ err error }

func (f failingLimiter) Allow(context.Context, ratelimit.Key) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, f.err
}

func TestRateLimitFailsClosed(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: dial tcp 10.1.2.3:6379: connection refused", ratelimit.ErrUnavailable), ratelimit.ErrUnavailable.Error()},
		{context.DeadlineExceeded, ratelimit.ErrUnavailable.Error()},
		{fmt.Errorf("%w: human/ws_event", ratelimit.ErrNoRule), ingest.MsgInternal},
		{errors.New("boom"), ingest.MsgInternal},
	}
	for _, tc := range cases {
		e := newRLEnv(t, failingLimiter{tc.err}, nil)
		ev := signedEvent(t, newSK(t), 1, "x")
		out := e.p.Ingest(ctx, ingest.Submission{Tenant: e.a, Event: ev})
		if out.OK || out.Message != tc.want {
			t.Errorf("limiter error %v: got %+v, want OK false %q", tc.err, out, tc.want)
		}
		if e.stored(t, e.a, ev.ID) {
			t.Errorf("limiter error %v: the event was stored", tc.err)
		}
	}
}
