package relaytest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/internal/rawclient"
	"github.com/buzzrelay/buzz/nostr"
)

// Dial opens a raw client on the relay's own host.
func (r *Relay) Dial(t testing.TB) *rawclient.Client {
	t.Helper()
	return rawclient.Dial(t, nil, r.URL, nil, r.URL)
}

// DialWith is Dial with the dialer d.
func (r *Relay) DialWith(t testing.TB, d *websocket.Dialer) *rawclient.Client {
	t.Helper()
	return rawclient.Dial(t, d, r.URL, nil, r.URL)
}

// DialHost opens a raw client on the relay's server with the Host header
// host (another community of the same relay); its AUTH events name
// ws://host.
func (r *Relay) DialHost(t testing.TB, host string) *rawclient.Client {
	t.Helper()
	return rawclient.Dial(t, nil, r.URL, http.Header{"Host": {host}}, "ws://"+host)
}

// IDs returns the events' ids, in order.
func IDs(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// MustPrefix fails t unless got starts with prefix.
func MustPrefix(t testing.TB, what, got, prefix string) {
	t.Helper()
	if !strings.HasPrefix(got, prefix) {
		t.Fatalf("%s = %q, want prefix %q", what, got, prefix)
	}
}

// WaitFor polls cond every few milliseconds until it holds, failing the
// test after five seconds: for a condition another goroutine or process
// establishes, with no event to wait on.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
