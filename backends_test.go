package buzz

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/rawclient"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

// testBackend is one storage backend for tests that run on both. open
// returns a new store instance over the backend's one data set (the same
// directory or database each time), so a test can restart a relay, or — when
// shared — run several relays ("pods") on it at once. Instances are closed
// at the end of the test.
type testBackend struct {
	name   string
	shared bool // several instances may be open at once (PostgreSQL)
	open   func(t testing.TB) store.Backend
}

// forEachBackend runs fn once on the embedded store as buzzd opens it by
// default (events in the LSM engine) and once on PostgreSQL (a fresh database; skipped, or failed with CI=true, when
// PostgreSQL is unreachable).
func forEachBackend(t *testing.T, fn func(t *testing.T, b testBackend)) {
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		fn(t, testBackend{name: "embedded", open: func(t testing.TB) store.Backend {
			return openEmbedded(t, dir)
		}})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		fn(t, testBackend{name: "postgres", shared: true, open: func(t testing.TB) store.Backend {
			st, err := postgres.Open(context.Background(), url, postgres.WithLogger(quietLogger()), postgres.WithMaxConns(6), postgres.WithCommitters(2))
			if err != nil {
				t.Fatalf("postgres.Open: %v", err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}})
	})
}

// pod is one relay on a store instance, served over a real HTTP server. Its
// clients name host in the Host header, so several pods on different ports
// serve the same community.
type pod struct {
	t     testing.TB
	relay *Relay
	srv   *httptest.Server
	st    store.Backend
	host  string
	tc    tenant.TenantContext
}

// startPod maps host to a community in st (idempotent) and serves a relay on
// st. The relay and server stop at the end of the test, or at stop.
func startPod(t testing.TB, st store.Backend, host string, opts ...Option) *pod {
	t.Helper()
	ctx := context.Background()
	if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
		t.Fatalf("EnsureCommunity: %v", err)
	}
	tc, err := tenant.Bind(ctx, st, host)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]Option{WithStore(st), WithDirectory(st), WithChannels(), WithLogger(quietLogger())}, opts...)
	rel, err := New(all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	p := &pod{t: t, relay: rel, srv: httptest.NewServer(rel), st: st, host: host, tc: tc}
	t.Cleanup(p.stop)
	return p
}

// stop shuts the relay down and closes the server (not the store).
func (p *pod) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.relay.Shutdown(ctx)
	p.srv.Close()
}

// dial opens a WebSocket to the pod with Host set to host.
func (p *pod) dialHost(t testing.TB, host string) *rawClient {
	t.Helper()
	return &rawClient{rawclient.Dial(t, nil, "ws"+strings.TrimPrefix(p.srv.URL, "http"), http.Header{"Host": {host}}, "ws://"+host)}
}

func (p *pod) dial(t testing.TB) *rawClient { t.Helper(); return p.dialHost(t, p.host) }
