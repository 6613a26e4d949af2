package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// TestAuthorityKinds pins the built-in set of authority kinds and that a
// pipeline adds every Config.Commands kind and Config.AuthorityKinds.
func TestAuthorityKinds(t *testing.T) {
	for k := 9000; k <= 9009; k++ {
		if !ingest.IsAuthorityKind(k) {
			t.Errorf("group command %d is not an authority kind", k)
		}
	}
	for _, k := range []int{9021, 9022, 9030, 9031, 9032, 9033, 9040, 9041, 9042, 9043, 9044} {
		if !ingest.IsAuthorityKind(k) {
			t.Errorf("%d is not an authority kind", k)
		}
	}
	for _, k := range []int{1, 9, 7, 5, 8999, 9010, 9020, 9023, 9029, 9034, 9039, 9045, 1984, 30620} {
		if ingest.IsAuthorityKind(k) {
			t.Errorf("%d is a built-in authority kind", k)
		}
	}
	noop := func(context.Context, ingest.Submission) (ingest.Outcome, bool) {
		return ingest.Outcome{OK: true}, false
	}
	p := newAuthorityPipeline(t, ingest.Config{
		Commands:       map[int]ingest.CommandFunc{30620: noop, 46020: noop},
		AuthorityKinds: []int{31999},
	})
	for _, k := range []int{9000, 30620, 46020, 31999} {
		if !p.IsAuthority(k) {
			t.Errorf("pipeline: %d is not an authority kind", k)
		}
	}
	if p.IsAuthority(1) {
		t.Error("pipeline: kind 1 is an authority kind")
	}
}

// TestAuthorityEmbedderKind: a kind listed in AuthorityKinds is refused
// unless its author is authenticated, and refused when stale.
func TestAuthorityEmbedderKind(t *testing.T) {
	p := newAuthorityPipeline(t, ingest.Config{AuthorityKinds: []int{31999}, AuthorityWindow: time.Minute})
	tc := p.tc
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	sign := func(at time.Time) *nostr.Event {
		ev := &nostr.Event{Kind: 31999, CreatedAt: at.Unix(), Tags: nostr.Tags{{"d", "x"}}}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ev := sign(time.Now())
	out := p.Ingest(context.Background(), ingest.Submission{Tenant: tc, Event: ev})
	if out.OK || out.Message != ingest.MsgAuthorityAuth || !out.RequestAuth {
		t.Fatalf("anonymous: %+v", out)
	}
	out = p.Ingest(context.Background(), ingest.Submission{Tenant: tc, Event: ev, AuthedAs: func(string) bool { return false }})
	if out.OK || out.Message != ingest.MsgAuthorityNotAuthor || out.RequestAuth {
		t.Fatalf("authenticated as another key: %+v", out)
	}
	author := func(pk string) bool { return pk == ev.PubKey }
	old := sign(time.Now().Add(-2 * time.Minute))
	if out := p.Ingest(context.Background(), ingest.Submission{Tenant: tc, Event: old, AuthedAs: author}); out.OK {
		t.Fatalf("stale: %+v", out)
	}
	if out := p.Ingest(context.Background(), ingest.Submission{Tenant: tc, Event: ev, AuthedAs: author}); !out.OK || !out.Stored {
		t.Fatalf("author: %+v", out)
	}
}

func TestAuthorityWindowValidated(t *testing.T) {
	env := newAuthorityPipeline(t, ingest.Config{})
	cfg := env.cfg
	cfg.AuthorityWindow = -time.Second
	if _, err := ingest.New(cfg); err == nil {
		t.Fatal("a negative AuthorityWindow was accepted")
	}
}

type authorityPipeline struct {
	*ingest.Pipeline
	cfg ingest.Config
	tc  tenant.TenantContext
}

func newAuthorityPipeline(t *testing.T, cfg ingest.Config) authorityPipeline {
	t.Helper()
	parts := newPipelineParts(t, "a.test")
	cfg = parts.config(cfg)
	p, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return authorityPipeline{Pipeline: p, cfg: cfg, tc: parts.tcs[0]}
}
