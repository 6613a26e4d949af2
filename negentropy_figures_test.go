package buzz

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nip77"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

// TestNegentropyFigures measures one NIP-77 reconciliation of N events
// whose two sides differ by 1 % (0.5 % only on each side), over a real
// WebSocket to a relay on each backend: round trips, bytes each way, and
// seconds (the relay's read of its set included). It runs only when
// BUZZ_NEG_FIGURES is set to N, e.g.
//
//	BUZZ_NEG_FIGURES=100000 go test -run TestNegentropyFigures -v -timeout 60m .
//
// (docs/benchmarks.md, "Negentropy sync", records its output).
func TestNegentropyFigures(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BUZZ_NEG_FIGURES"))
	if n <= 0 {
		t.Skip("set BUZZ_NEG_FIGURES=N to measure a reconciliation of N events")
	}
	ctx := context.Background()
	// The events: ids are what reconciliation sees; the store keeps each
	// event as given (no signature check below the relay).
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	evs := make([]*nostr.Event, n)
	base := time.Now().Unix() - int64(n)
	var sg sync.WaitGroup
	procs := runtime.GOMAXPROCS(0)
	for g := range procs {
		sg.Go(func() {
			for i := g; i < n; i += procs {
				ev := &nostr.Event{Kind: 1, CreatedAt: base + int64(i/4), Content: "figure " + strconv.Itoa(i), Tags: nostr.Tags{}}
				if err := ev.Sign(sk); err != nil {
					panic(err)
				}
				evs[i] = ev
			}
		})
	}
	sg.Wait()
	t.Logf("signed %d events in %s", n, time.Since(start).Round(time.Millisecond))
	// Each backend, and how its events are loaded: on the embedded store
	// by 16 writers at once, so its group commit batches them; on
	// PostgreSQL with COPY (postgres.BulkLoad), 100,000 at a time, which
	// only shortens the setup.
	type backend struct {
		open func(t *testing.T) store.Backend
		load func(t *testing.T, st store.Backend, c tenant.CommunityID, evs []*nostr.Event)
	}
	var pgURL string
	backends := map[string]backend{
		"embedded (LSM events)": {
			open: func(t *testing.T) store.Backend {
				st, err := embedded.Open(ctx, t.TempDir(), embedded.WithLogger(quietLogger()))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = st.Close() })
				return st
			},
			load: func(t *testing.T, st store.Backend, c tenant.CommunityID, evs []*nostr.Event) {
				var wg sync.WaitGroup
				errs := make(chan error, 16)
				for w := range 16 {
					wg.Go(func() {
						for i := w; i < len(evs); i += 16 {
							if err := st.Save(ctx, c, evs[i]); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			},
		},
		"postgres": {
			open: func(t *testing.T) store.Backend {
				pgURL = pgtest.NewDatabase(t)
				st, err := postgres.Open(ctx, pgURL, postgres.WithLogger(quietLogger()))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = st.Close() })
				return st
			},
			load: func(t *testing.T, _ store.Backend, c tenant.CommunityID, evs []*nostr.Event) {
				for from := 0; from < len(evs); from += 100_000 {
					if _, err := postgres.BulkLoad(ctx, pgURL, c, evs[from:min(from+100_000, len(evs))]); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
	}
	for _, name := range []string{"embedded (LSM events)", "postgres"} {
		if only := os.Getenv("BUZZ_NEG_FIGURES_BACKEND"); only != "" && !strings.HasPrefix(name, only) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			b := backends[name]
			st := b.open(t)
			const host = "figures.example"
			cid, _, err := st.EnsureCommunity(ctx, host)
			if err != nil {
				t.Fatal(err)
			}
			// The relay holds every event but those i%200 == 0; the client
			// every event but those i%200 == 1: 1 % differ.
			var items []nip77.Item
			for i, ev := range evs {
				if i%200 != 1 {
					items = append(items, nip77.Item{CreatedAt: ev.CreatedAt, ID: ev.ID})
				}
			}
			var stored []*nostr.Event
			for i, ev := range evs {
				if i%200 != 0 {
					stored = append(stored, ev)
				}
			}
			start := time.Now()
			b.load(t, st, cid, stored)
			t.Logf("stored %d events in %s", n-n/200, time.Since(start).Round(time.Millisecond))
			relay, err := New(WithStore(st), WithDirectory(st), WithChannels(), WithLogger(quietLogger()),
				WithLimits(Limits{MaxNegentropyItems: 2 * n}))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(relay)
			defer srv.Close()
			defer func() { _ = relay.Shutdown(ctx) }()

			// The relay's side read alone, as buzzd sync reads its own.
			start = time.Now()
			set, err := relay.NegentropyItems(ctx, cid, nostr.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			read := time.Since(start)

			ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), map[string][]string{"Host": {host}})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			tp := wsTransport{ws}
			start = time.Now()
			res, err := nip77.Reconcile(ctx, tp, "fig", []byte(`{}`), items, 60_000, nil)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if len(res.Have) != n/200 || len(res.Need) != n/200 {
				t.Fatalf("have %d need %d, want %d each", len(res.Have), len(res.Need), n/200)
			}
			fmt.Printf("negentropy %s: %d events, %d differ: %d round trips, %d bytes sent, %d bytes received, %.2f s (relay set read alone: %d items in %.2f s)\n",
				name, n, len(res.Have)+len(res.Need), res.Stats.RoundTrips, res.Stats.BytesSent, res.Stats.BytesReceived, took.Seconds(), len(set), read.Seconds())
		})
	}
}

// wsTransport is a nip77.Transport over a gorilla connection.
type wsTransport struct{ ws *websocket.Conn }

func (w wsTransport) Send(_ context.Context, m []byte) error {
	return w.ws.WriteMessage(websocket.TextMessage, m)
}

func (w wsTransport) Recv(context.Context) ([]byte, error) {
	_ = w.ws.SetReadDeadline(time.Now().Add(5 * time.Minute))
	_, b, err := w.ws.ReadMessage()
	return b, err
}
