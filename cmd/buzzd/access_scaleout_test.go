package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nostr"
)

// dialAuthed dials p for host and authenticates (NIP-42) as sk.
func dialAuthed(t *testing.T, p *pod, host string, sk nostr.SecretKey) *wsClient {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d", p.port), http.Header{"Host": {host}})
	if err != nil {
		t.Fatalf("dial %s: %v", p.name, err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &wsClient{t: t, ws: ws, host: host}
	ch, ok := c.next().(*nostr.AuthChallengeMessage)
	if !ok {
		t.Fatal("no AUTH challenge")
	}
	c.challenge = ch.Challenge
	auth := sign(t, sk, nostr.KindClientAuth, nostr.Tag{"challenge", ch.Challenge}, nostr.Tag{"relay", "ws://" + host})
	if err := ws.WriteMessage(websocket.TextMessage, nostr.AppendAuth(nil, auth.AppendJSON(nil))); err != nil {
		t.Fatal(err)
	}
	for {
		if ok, is := c.next().(*nostr.OKMessage); is {
			if !ok.OK {
				t.Fatalf("AUTH on %s refused: %q", p.name, ok.Message)
			}
			return c
		}
	}
}

// TestScaleOutChannelRevocation: two pods on one database and Redis. A
// member subscribed to a private channel on pod B is removed (9001) through
// pod A: the control bus carries the change, so pod B closes the
// subscription with CLOSED "restricted: channel access revoked" well before
// its access cache would expire, and refuses a new REQ for the channel.
func TestScaleOutChannelRevocation(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	d := startDeployment(t, 2, freshDatabase(t), "redis://127.0.0.1:6379", nil)
	podA, podB := d.pods[0], d.pods[1]
	owner, bob := mustKey(t), mustKey(t)

	oc := dialAuthed(t, podA, hostAlpha, owner)
	ch := newUUID()
	if ok := oc.publish(sign(t, owner, 9007, nostr.Tag{"h", ch}, nostr.Tag{"name", "p"}, nostr.Tag{"visibility", "private"})); !ok.OK {
		t.Fatalf("create: %q", ok.Message)
	}
	if ok := oc.publish(sign(t, owner, 9000, nostr.Tag{"h", ch}, nostr.Tag{"p", bob.PublicKey()})); !ok.OK {
		t.Fatalf("put bob: %q", ok.Message)
	}

	bc := dialAuthed(t, podB, hostAlpha, bob)
	// Bob's subscription on pod B is admitted (the 9000 reached pod B as a
	// control message; a fresh connection computes its access anyway).
	f := nostr.Filter{Kinds: []int{9}, Tags: map[string][]string{"h": {ch}}}
	if err := bc.ws.WriteMessage(websocket.TextMessage, nostr.AppendReq(nil, "live", f)); err != nil {
		t.Fatal(err)
	}
	if _, ok := bc.next().(*nostr.EOSEMessage); !ok {
		t.Fatal("bob's subscription on pod B was not admitted")
	}
	// A message through pod A reaches bob live on pod B: his access is cached.
	msg := sign(t, owner, 9, nostr.Tag{"h", ch})
	if ok := oc.publish(msg); !ok.OK {
		t.Fatalf("post: %q", ok.Message)
	}
	if ev, ok := bc.next().(*nostr.EventMessage); !ok || ev.Event.ID != msg.ID {
		t.Fatalf("bob's live event: %#v", ev)
	}

	// Remove bob through pod A.
	removed := time.Now()
	if ok := oc.publish(sign(t, owner, 9001, nostr.Tag{"h", ch}, nostr.Tag{"p", bob.PublicKey()})); !ok.OK {
		t.Fatalf("remove bob: %q", ok.Message)
	}
	// The access cache lives 10 s: the CLOSED must come from the control
	// message, well before.
	_ = bc.ws.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, raw, err := bc.ws.ReadMessage()
	if err != nil {
		t.Fatalf("no CLOSED on pod B within 3 s of the removal through pod A: %v", err)
	}
	m, err := nostr.ParseRelayMessage(raw)
	if err != nil {
		t.Fatalf("unparsable %q", raw)
	}
	closed, ok := m.(*nostr.ClosedMessage)
	if !ok || closed.SubID != "live" || closed.Message != "restricted: channel access revoked" {
		t.Fatalf("bob's message after removal = %s, want CLOSED live \"restricted: channel access revoked\"", raw)
	}
	t.Logf("CLOSED on pod B %v after the 9001 was sent to pod A", time.Since(removed).Round(time.Millisecond))

	// A new REQ for the channel on pod B is refused, on the same connection.
	if evs, reason := bc.req(f); reason != "restricted: not a channel member" {
		t.Fatalf("REQ on pod B after removal: %d events, CLOSED %q", len(evs), reason)
	}
}
