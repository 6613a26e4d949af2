package control_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/pubsub/redis"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

const host = "c.example"

// staleDirectory maps host to its community whatever the store says: the
// answer of a host lookup that started before the community was archived
// and returns after every cache was told to forget the host.
type staleDirectory struct{ id tenant.CommunityID }

func (d staleDirectory) LookupHost(_ context.Context, h string) (tenant.CommunityID, error) {
	if h == host {
		return d.id, nil
	}
	return tenant.CommunityID{}, tenant.ErrUnmappedHost
}

// pod is one relay process: a relay over its own broker, whose host
// lookups go through an ArchiveFence over a stale directory.
type pod struct {
	relay *buzz.Relay
	disc  *control.Disconnector
	url   string
}

// newPod starts a relay over b; its control bus is b when b is one (the
// Redis broker), else the relay's in-process default.
func newPod(t *testing.T, st *embedded.Store, id tenant.CommunityID, b pubsub.Broker) *pod {
	t.Helper()
	fence, err := control.NewArchiveFence(staleDirectory{id}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	opts := []buzz.Option{buzz.WithStore(st), buzz.WithDirectory(fence), buzz.WithControlHook(fence.OnControl),
		buzz.WithBroker(b), buzz.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	if cb, ok := b.(control.Bus); ok {
		opts = append(opts, buzz.WithControlBus(cb))
	}
	relay, err := buzz.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := control.NewDisconnector(relay)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(relay)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = relay.Shutdown(ctx)
		srv.Close()
	})
	return &pod{relay: relay, disc: disc, url: "ws" + strings.TrimPrefix(srv.URL, "http")}
}

// dial connects to host on p and waits until the relay serves the
// connection (an answered REQ), so that p retains the community's topics.
// It returns nil and the HTTP status when the upgrade is refused.
func (p *pod) dial(t *testing.T) (*websocket.Conn, int) {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(p.url, http.Header{"Host": {host}})
	if err != nil {
		if resp == nil {
			t.Fatalf("dial: %v", err)
		}
		return nil, resp.StatusCode
	}
	t.Cleanup(func() { ws.Close() })
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`["REQ","s",{"kinds":[1]}]`)); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for EOSE: %v", err)
		}
		if strings.HasPrefix(string(msg), `["EOSE"`) {
			return ws, http.StatusSwitchingProtocols
		}
	}
}

// closed reports whether the relay closed ws (within the read deadline).
func closed(t *testing.T, ws *websocket.Conn) {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("connection not closed by the relay: %v", err)
			}
			return
		}
	}
}

// refusedEventually polls until a new connection to host on p is refused (the
// control message travels asynchronously to another process).
func (p *pod) refusedEventually(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ws, code := p.dial(t)
		if ws == nil {
			if code != http.StatusNotFound {
				t.Fatalf("refused with %d, want 404", code)
			}
			return
		}
		ws.Close()
		if time.Now().After(deadline) {
			t.Fatal("the archived community is still served")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *pod) servedEventually(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ws, _ := p.dial(t); ws != nil {
			ws.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the unarchived community is not served")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func openStore(t *testing.T) (*embedded.Store, tenant.CommunityID) {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, filepath.Join(t.TempDir(), "buzz.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, _, err := st.EnsureCommunity(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	return st, id
}

// archive archives the community in the store and tells every process
// the way the operator API does: the Disconnector, then HostsChanged.
func archive(t *testing.T, st *embedded.Store, p *pod, id tenant.CommunityID, archived bool) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := st.SetArchived(ctx, id, "", archived, 0); err != nil {
		t.Fatal(err)
	}
	if archived {
		if err := p.disc.DisconnectCommunity(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.relay.PublishControl(ctx, id, control.HostsChanged{Hosts: []string{host}, Archived: archived}); err != nil {
		t.Fatal(err)
	}
}

// TestArchiveAcrossPodsOverRedis: two relays, each with its own Redis
// broker in one namespace. Archiving on one closes the community's
// connections on both, and the other refuses new ones although its
// directory still maps the host; an alias change leaves the fence up; an
// unarchive on the first lifts the other's fence.
func TestArchiveAcrossPodsOverRedis(t *testing.T) {
	url := "redis://" + testenv.NeedRedis(t)
	ns := testenv.RandomName("control-test")
	st, id := openStore(t)
	broker := func() *redis.Broker {
		b, err := redis.New(context.Background(), url, redis.WithNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	a, b := newPod(t, st, id, broker()), newPod(t, st, id, broker())

	onA, _ := a.dial(t)
	onB, _ := b.dial(t)
	archive(t, st, a, id, true)
	closed(t, onA)
	closed(t, onB)
	b.refusedEventually(t)
	if ws, code := a.dial(t); ws != nil || code != http.StatusNotFound {
		t.Fatalf("archiving pod serves the archived community (%d)", code)
	}

	// An alias change on the archived community says nothing about its
	// state: b stays fenced. The unarchive that follows lifts the fence:
	// ordered after the alias message, it shows the alias message arrived.
	if err := a.relay.PublishControl(context.Background(), id, control.HostsChanged{Hosts: []string{"alias.example"}, AliasOnly: true}); err != nil {
		t.Fatal(err)
	}
	if ws, code := b.dial(t); ws != nil || code != http.StatusNotFound {
		t.Fatalf("an alias change lifted the fence (%d)", code)
	}
	archive(t, st, a, id, false)
	b.servedEventually(t)
}

// TestArchiveInOneProcess: the same pieces over the in-process broker and
// control bus.
func TestArchiveInOneProcess(t *testing.T) {
	st, id := openStore(t)
	local, err := pubsub.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	p := newPod(t, st, id, local)

	ws, _ := p.dial(t)
	archive(t, st, p, id, true)
	closed(t, ws)
	if ws, code := p.dial(t); ws != nil || code != http.StatusNotFound {
		t.Fatalf("the archived community is served (%d)", code)
	}
	archive(t, st, p, id, false)
	if ws, code := p.dial(t); ws == nil {
		t.Fatalf("the unarchived community is refused (%d)", code)
	}
}
