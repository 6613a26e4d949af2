package buzz

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/tenant"
)

// dialHost opens a raw WebSocket to the test server naming host in the
// Host header, and reads the AUTH challenge.
func dialHost(t *testing.T, tr *testRelay, host string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	h.Set("Host", host)
	ws, _, err := websocket.DefaultDialer.Dial(tr.url, h)
	if err != nil {
		t.Fatalf("dial %s: %v", host, err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); err != nil { // ["AUTH", challenge]
		t.Fatalf("read challenge: %v", err)
	}
	_ = ws.SetReadDeadline(time.Time{})
	return ws
}

// closeCode reads until the connection ends and returns the close code.
func closeCode(t *testing.T, ws *websocket.Conn) (int, string) {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := ws.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Text
		}
		t.Fatalf("connection ended without a close frame: %v", err)
	}
}

func TestDisconnectCommunity(t *testing.T) {
	tr := newTestRelay(t)
	ctx := context.Background()
	const other = "other.example"
	if _, _, err := tr.store.EnsureCommunity(ctx, other); err != nil {
		t.Fatal(err)
	}
	a1, a2 := dialHost(t, tr, tr.host), dialHost(t, tr, tr.host)
	b := dialHost(t, tr, other)

	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := tr.relay.DisconnectCommunity(dctx, tr.tc.Community()); err != nil {
		t.Fatalf("DisconnectCommunity: %v", err)
	}
	for _, ws := range []*websocket.Conn{a1, a2} {
		if code, text := closeCode(t, ws); code != CloseCommunityGone || text != CloseCommunityGoneText {
			t.Fatalf("close = %d %q; want %d %q", code, text, CloseCommunityGone, CloseCommunityGoneText)
		}
	}
	// The other community's socket still works.
	if err := b.WriteMessage(websocket.TextMessage, []byte(`["REQ","s",{"limit":1}]`)); err != nil {
		t.Fatal(err)
	}
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, msg, err := b.ReadMessage(); err != nil || string(msg) != `["EOSE","s"]` {
		t.Fatalf("other community after disconnect: %q, %v", msg, err)
	}
	// The community is still mapped (nothing archived it), so new sockets
	// are accepted: DisconnectCommunity closes, the directory refuses.
	dialHost(t, tr, tr.host)

	// Nothing bound: returns at once.
	if err := tr.relay.DisconnectCommunity(dctx, tenant.NewCommunityID()); err != nil {
		t.Fatal(err)
	}
	if err := tr.relay.DisconnectCommunity(dctx, tenant.CommunityID{}); err != nil {
		t.Fatal(err)
	}
}

// TestDisconnectCommunityContext: a client that never reads is dropped when
// the caller's context ends.
func TestDisconnectCommunityContext(t *testing.T) {
	tr := newTestRelay(t)
	dialHost(t, tr, tr.host)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.relay.DisconnectCommunity(ctx, tr.tc.Community()); !errors.Is(err, context.Canceled) {
		t.Fatalf("DisconnectCommunity with a cancelled context: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(tr.relay.connsOf(tr.tc.Community(), nil)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("connection still registered after a forced disconnect")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
