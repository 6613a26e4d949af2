package ingest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/tenant"
)

// TestGiftWrapJudgedAsAuthenticatedKey: a gift wrap signed by a throwaway
// key is admitted as the connection's authenticated key: on an
// AuthRequired pipeline it is accepted, the rate limit (and the tier) is
// the authenticated key's, a forged wrap costs nothing, and a submission
// whose Actor the connection did not authenticate as gains nothing.
func TestGiftWrapJudgedAsAuthenticatedKey(t *testing.T) {
	l, err := ratelimit.NewMemory(ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassEvent: {Limit: 2, Window: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	var tiered []string
	e := newRLEnv(t, l, func(_ context.Context, _ tenant.TenantContext, pk string) ratelimit.Tier {
		tiered = append(tiered, pk)
		return ratelimit.TierHuman
	})
	ctx := context.Background()
	alice, bob := newSK(t).PublicKey(), newSK(t).PublicKey()
	authed := func(pk string) bool { return pk == alice }
	wrap := func() *nostr.Event {
		ev := &nostr.Event{Kind: nostr.KindGiftWrap, CreatedAt: time.Now().Unix(), Content: "sealed", Tags: nostr.Tags{{"p", bob}}}
		if err := ev.Sign(newSK(t)); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	sub := func(ev *nostr.Event) ingest.Submission {
		return ingest.Submission{Tenant: e.a, Event: ev, AuthedAs: authed, Actor: alice}
	}

	forged := wrap()
	forged.Content = "changed"
	if out := e.p.Ingest(ctx, sub(forged)); out.OK || !strings.HasPrefix(out.Message, "invalid:") {
		t.Fatalf("forged wrap: %+v", out)
	}
	for i := range 2 {
		if out := e.p.Ingest(ctx, sub(wrap())); !out.OK {
			t.Fatalf("wrap %d within alice's quota refused: %+v", i, out)
		}
	}
	if out := e.p.Ingest(ctx, sub(wrap())); out.OK || !strings.HasPrefix(out.Message, "rate-limited: ") {
		t.Fatalf("third wrap, fresh throwaway key: %+v", out)
	}
	for _, pk := range tiered {
		if pk != alice {
			t.Fatalf("tier asked for %s, want only alice's key", pk)
		}
	}

	// An Actor the connection did not authenticate as is not used: the
	// wrap is its signer's, charged to the signer's fresh quota.
	ev := wrap()
	s := ingest.Submission{Tenant: e.a, Event: ev, AuthedAs: authed, Actor: bob}
	if out := e.p.Ingest(ctx, s); !out.OK {
		t.Fatalf("wrap with a foreign Actor on an optional-auth pipeline: %+v", out)
	}
	if tiered[len(tiered)-1] != ev.PubKey {
		t.Fatalf("tier asked for %s, want the signer %s", tiered[len(tiered)-1], ev.PubKey)
	}
}
