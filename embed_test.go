package buzz

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/store"
)

// An embedder mounts the health handlers where it wants them, and may
// register its own /healthz on the relay's Mux without a conflict.
func TestHealthHandlersAreTheEmbeddersToMount(t *testing.T) {
	tr := newTestRelay(t)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(tr.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(HealthzPath); code != http.StatusNotFound {
		t.Fatalf("/healthz served before it was mounted: %d", code)
	}
	// Would panic on a pattern conflict if the relay had registered it.
	tr.relay.Mux().HandleFunc("GET "+HealthzPath, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "embedder's own")
	})
	tr.relay.Mux().Handle("GET /internal/ready", tr.relay.ReadyzHandler())
	if code, body := get(HealthzPath); code != 200 || body != "embedder's own" {
		t.Fatalf("embedder's /healthz: %d %q", code, body)
	}
	if code, body := get("/internal/ready"); code != 200 || !strings.Contains(body, `"ready"`) {
		t.Fatalf("mounted readiness: %d %q", code, body)
	}
}

// eventsOnly hides every optional interface of the store it wraps.
type eventsOnly struct{ store.EventStore }

func TestChannelsOnlyWithWithChannels(t *testing.T) {
	st := newTestRelay(t).store
	if r, err := New(WithStore(eventsOnly{st}), WithDirectory(st), WithChannels(), WithLogger(quietLogger())); err == nil {
		_ = r.Shutdown(context.Background())
		t.Fatal("WithChannels accepted a store that keeps no channels")
	} else if !strings.Contains(err.Error(), "store.ChannelStore") {
		t.Fatalf("error %q does not name what the store lacks", err)
	}

	// The store keeps channels, but nobody asked for them.
	tr := newTestRelay(t)
	plain, err := New(WithStore(tr.store), WithDirectory(tr.store), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Shutdown(context.Background())
	if slices.Contains(plain.NIP11Document().SupportedNIPs, 29) {
		t.Fatal("NIP-29 advertised without WithChannels")
	}
	if !slices.Contains(tr.relay.NIP11Document().SupportedNIPs, 29) {
		t.Fatal("NIP-29 not advertised with WithChannels")
	}
}
