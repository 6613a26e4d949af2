package sqlite_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/sqlite"
	"github.com/buzzrelay/buzz/tenant"
)

// TestRelayCancelsQueriesInDatabase runs a relay on the embedded store
// whose event reads never end by themselves, and checks that its read
// connection is free again within a second of the client vanishing
// mid-COUNT and mid-REQ, of a CLOSE, and that the query deadline ends a
// read with CLOSED.
func TestRelayCancelsQueriesInDatabase(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir(), sqlite.WithSlowReadsForTest(), sqlite.WithReadConnections(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	within := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, d)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Two relays on the store: one whose deadline is far (cancellation is
	// what ends reads), one whose deadline is short.
	start := func(timeout time.Duration) string {
		rel, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithLimits(buzz.Limits{QueryTimeout: timeout}))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(rel)
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_ = rel.Shutdown(sctx)
			srv.Close()
		})
		host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
			t.Fatal(err)
		}
		return "ws" + strings.TrimPrefix(srv.URL, "http")
	}
	wsURL := start(time.Minute)
	shortURL := start(500 * time.Millisecond)
	dialURL := func(u string) *websocket.Conn {
		ws, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		return ws
	}
	dial := func() *websocket.Conn {
		ws, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		return ws
	}
	send := func(ws *websocket.Conn, msg []byte) {
		if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
	}
	f := nostr.Filter{Kinds: []int{1}}
	for _, tc := range []struct {
		name string
		msg  []byte
		end  func(ws *websocket.Conn)
	}{
		{"COUNT, client vanishes", nostr.AppendCount(nil, "c", f), func(ws *websocket.Conn) { ws.UnderlyingConn().Close() }},
		{"REQ, client vanishes", nostr.AppendReq(nil, "r", f), func(ws *websocket.Conn) { ws.UnderlyingConn().Close() }},
		{"COUNT, CLOSE", nostr.AppendCount(nil, "c", f), func(ws *websocket.Conn) { send(ws, nostr.AppendClose(nil, "c")) }},
		{"REQ, CLOSE", nostr.AppendReq(nil, "r", f), func(ws *websocket.Conn) { send(ws, nostr.AppendClose(nil, "r")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := dial()
			send(ws, tc.msg)
			within("query running", 10*time.Second, func() bool { return sqlite.ReadsInUse(st) == 1 })
			tc.end(ws)
			within("read connection free", time.Second, func() bool { return sqlite.ReadsInUse(st) == 0 })
		})
	}

	t.Run("deadline", func(t *testing.T) {
		ws := dialURL(shortURL)
		send(ws, nostr.AppendCount(nil, "c", f))
		_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			_, raw, err := ws.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			if m, _ := nostr.ParseRelayMessage(raw); m != nil {
				if cl, ok := m.(*nostr.ClosedMessage); ok {
					if !strings.HasPrefix(cl.Message, "error: query took too long") {
						t.Fatalf("CLOSED %q, want the deadline reason", cl.Message)
					}
					break
				}
			}
		}
		within("read connection free", time.Second, func() bool { return sqlite.ReadsInUse(st) == 0 })
	})
}
