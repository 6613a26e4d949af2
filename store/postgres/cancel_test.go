package postgres_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

// TestRelayCancelsQueriesInDatabase runs a relay on PostgreSQL whose event
// reads are slow (a server-side sleep standing in for a slow plan) and
// checks that the database is idle again within a second of the client
// vanishing mid-COUNT and mid-REQ, of a CLOSE, and of the query deadline.
func TestRelayCancelsQueriesInDatabase(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	st, err := postgres.Open(ctx, url, postgres.WithReadDelayForTest(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mon.Close(ctx) })
	active := func() int {
		var n int
		err := mon.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%pg_sleep%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	within := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, d)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	rel, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithLimits(buzz.Limits{QueryTimeout: 30 * time.Second}))
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
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")
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
			within("query running in PostgreSQL", 10*time.Second, func() bool { return active() == 1 })
			tc.end(ws)
			within("PostgreSQL idle", time.Second, func() bool { return active() == 0 })
		})
	}
}

// TestRelayQueryDeadline checks that a read running past the relay's
// QueryTimeout is cancelled in PostgreSQL and answered with CLOSED.
func TestRelayQueryDeadline(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	st, err := postgres.Open(ctx, url, postgres.WithReadDelayForTest(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rel, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithLimits(buzz.Limits{QueryTimeout: 300 * time.Millisecond}))
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
	host, _ := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, msg := range [][]byte{nostr.AppendReq(nil, "r", nostr.Filter{}), nostr.AppendCount(nil, "c", nostr.Filter{})} {
		if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
	}
	closed := map[string]string{}
	_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	for len(closed) < 2 {
		_, raw, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		m, err := nostr.ParseRelayMessage(raw)
		if err != nil {
			t.Fatal(err)
		}
		if cl, ok := m.(*nostr.ClosedMessage); ok {
			closed[cl.SubID] = cl.Message
		}
	}
	for sub, msg := range closed {
		if !strings.HasPrefix(msg, "error: query took too long") {
			t.Errorf("CLOSED %s %q, want the deadline reason", sub, msg)
		}
	}
}
