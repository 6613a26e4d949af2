package ingest_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// pipelineParts are what a pipeline under test runs on: a real embedded
// store holding a community per host, the in-process broker and a
// verifier, each closed when the test ends.
type pipelineParts struct {
	st  *embedded.Store
	br  *pubsub.Local
	v   *nostr.Verifier
	tcs []tenant.TenantContext // one per host, in order
}

func newPipelineParts(t *testing.T, hosts ...string) pipelineParts {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	br, err := pubsub.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Close() })
	v, err := nostr.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	p := pipelineParts{st: st, br: br, v: v}
	for _, h := range hosts {
		if _, _, err := st.EnsureCommunity(ctx, h); err != nil {
			t.Fatal(err)
		}
		tc, err := tenant.Bind(ctx, st, h)
		if err != nil {
			t.Fatal(err)
		}
		p.tcs = append(p.tcs, tc)
	}
	return p
}

// config returns cfg on the parts (its store the parts' own, unless cfg
// names one) with the tests' common limits and a silent logger.
func (p pipelineParts) config(cfg ingest.Config) ingest.Config {
	if cfg.Store == nil {
		cfg.Store = p.st
	}
	cfg.Broker, cfg.Verifier = p.br, p.v
	cfg.MaxFutureSkew, cfg.MaxContentBytes, cfg.Logger = time.Minute, 1<<16, slog.New(slog.DiscardHandler)
	return cfg
}
