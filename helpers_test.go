package buzz

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/internal/rawclient"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// testRelay is a Relay on store/embedded in a temp dir, served over a real
// HTTP server, with the server's host mapped to a community.
type testRelay struct {
	t     testing.TB
	relay *Relay
	srv   *httptest.Server
	store *embedded.Store
	url   string // ws://127.0.0.1:port
	host  string // normalized host, e.g. localhost:port
	tc    tenant.TenantContext
	// leak leaves the relay, server and store running after the test:
	// go-nostr v0.52.3 has a data race on every connection close (its
	// writer goroutine clears Relay.Connection while close() reads it), so
	// tests using it never close their go-nostr connections.
	leak bool
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newTestRelay(t testing.TB, opts ...Option) *testRelay {
	t.Helper()
	return newTestRelayWith(t, nil, opts...)
}

// newTestRelayWith is newTestRelay with a hook that may adjust the server
// before it starts.
func newTestRelayWith(t testing.TB, prepare func(*httptest.Server), opts ...Option) *testRelay {
	t.Helper()
	ctx := context.Background()
	st := openEmbedded(t, t.TempDir())
	tr := &testRelay{t: t, store: st}
	// The server starts before the relay exists so its host can be mapped;
	// the handler is installed right after.
	var h http.Handler
	tr.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	if prepare != nil {
		prepare(tr.srv)
	}
	tr.srv.Start()
	tr.url = "ws" + strings.TrimPrefix(tr.srv.URL, "http")
	var err error
	tr.host, err = tenant.NormalizeHost(strings.TrimPrefix(tr.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(ctx, tr.host); err != nil {
		t.Fatalf("EnsureCommunity: %v", err)
	}
	tr.tc, err = tenant.Bind(ctx, st, tr.host)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]Option{WithStore(st), WithDirectory(st), WithChannels(), WithLogger(quietLogger())}, opts...)
	tr.relay, err = New(all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h = tr.relay
	t.Cleanup(func() {
		if tr.leak {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tr.relay.Shutdown(ctx)
		tr.srv.Close()
		_ = st.Close()
	})
	return tr
}

// rawClient is a raw WebSocket client (internal/rawclient) with this
// package's shorthands.
type rawClient struct{ *rawclient.Client }

// signer creates signed events for one key, known to every rawClient's
// Publish.
type signer = rawclient.Signer

func newSigner(t testing.TB) *signer { return rawclient.NewSigner(t) }

func (tr *testRelay) dial(t testing.TB) *rawClient {
	t.Helper()
	return tr.dialWith(t, websocket.DefaultDialer)
}

func (tr *testRelay) dialWith(t testing.TB, d *websocket.Dialer) *rawClient {
	t.Helper()
	return &rawClient{rawclient.Dial(t, d, tr.url, nil, tr.url)}
}

func now() int64 { return time.Now().Unix() }

func ids(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func eq[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func mustPrefix(t testing.TB, what, got, prefix string) {
	t.Helper()
	if !strings.HasPrefix(got, prefix) {
		t.Fatalf("%s = %q, want prefix %q", what, got, prefix)
	}
}

// awaitSignal waits up to 5 s for a value on ch: a barrier a hook or a
// test double signals.
func awaitSignal[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// openEmbedded opens the embedded store in dir as buzzd opens it by default
// (metadata in SQLite, events in the LSM engine) and closes it at the end of
// the test.
func openEmbedded(t testing.TB, dir string, opts ...embedded.Option) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(context.Background(), dir, append([]embedded.Option{embedded.WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatalf("open the embedded store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
