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

// lockEvents makes every event read of the database at url slow: a
// connection of the test's own holds an ACCESS EXCLUSIVE lock on the
// events table in an open transaction until the test ends, so each read
// waits in PostgreSQL, visible in pg_stat_activity, until it is
// cancelled. It returns the number of backends waiting on that lock, so
// the store under test must run without its analyser
// (WithAnalyzeInterval(0)): the round Open starts reads the event tables'
// sizes, would wait on the lock too, and be counted as a read not
// cancelled.
func lockEvents(t *testing.T, url string) (waiting func() int) {
	t.Helper()
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close(ctx) })
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var holderPID int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holderPID); err != nil {
		t.Fatal(err)
	}
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mon.Close(ctx) })
	return func() int {
		var n int
		err := mon.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'active' AND $1 = ANY (pg_blocking_pids(pid))`, holderPID).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// TestRelayCancelsQueriesInDatabase runs a relay on PostgreSQL whose event
// reads are slow (they wait for a lock on the events table that another
// connection holds) and checks that the database is idle again within a
// second of the client vanishing mid-COUNT and mid-REQ, and of a CLOSE.
func TestRelayCancelsQueriesInDatabase(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	st, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(0))
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
	active := lockEvents(t, url)
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
// QueryTimeout (waiting for a lock on the events table) is answered with
// CLOSED and cancelled in PostgreSQL.
func TestRelayQueryDeadline(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	st, err := postgres.Open(ctx, url, postgres.WithAnalyzeInterval(0))
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
	waiting := lockEvents(t, url)
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
	// The cancel request reaches PostgreSQL on a connection of its own,
	// after the CLOSED: on a loaded machine that can take a while.
	for deadline := time.Now().Add(5 * time.Second); waiting() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("reads still waiting in PostgreSQL 5 s after their CLOSED")
		}
	}
}
