package main

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
)

// wsClient is a raw WebSocket client that may name any Host.
type wsClient struct {
	t         *testing.T
	ws        *websocket.Conn
	host      string // the Host the connection names
	challenge string // the relay's AUTH challenge
}

// testKeys holds every key mustKey made, by public key, so that a client
// asked to authenticate as an event's author can (see publish).
var testKeys sync.Map // pubkey -> nostr.SecretKey

func dialAs(t *testing.T, port int, host string) *wsClient {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d", port), http.Header{"Host": {host}})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s via :%d: %v (HTTP %d)", host, port, err, status)
	}
	t.Cleanup(func() { ws.Close() })
	c := &wsClient{t: t, ws: ws, host: host}
	if ch, ok := c.next().(*nostr.AuthChallengeMessage); ok {
		c.challenge = ch.Challenge
	}
	return c
}

func (c *wsClient) next() nostr.RelayMessage {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	m, err := nostr.ParseRelayMessage(b)
	if err != nil {
		c.t.Fatalf("unparsable %q", b)
	}
	return m
}

// publish sends ev and returns its OK. Like a standard client, when the
// relay asks for ev's author to be authenticated (an authority event), it
// authenticates as the author (NIP-42, a key mustKey made) and sends ev
// again.
func (c *wsClient) publish(ev *nostr.Event) *nostr.OKMessage {
	c.t.Helper()
	ok := c.send(nostr.AppendEventEnvelope(nil, ev.AppendJSON(nil)))
	if ok.OK || (ok.Message != ingest.MsgAuthorityAuth && ok.Message != ingest.MsgAuthorityNotAuthor) {
		return ok
	}
	v, known := testKeys.Load(ev.PubKey)
	if !known || c.challenge == "" {
		return ok
	}
	auth := sign(c.t, v.(nostr.SecretKey), nostr.KindClientAuth, nostr.Tag{"challenge", c.challenge}, nostr.Tag{"relay", "ws://" + c.host})
	if a := c.send(nostr.AppendAuth(nil, auth.AppendJSON(nil))); !a.OK {
		c.t.Fatalf("AUTH as the author of %s: %q", ev.ID, a.Message)
	}
	return c.send(nostr.AppendEventEnvelope(nil, ev.AppendJSON(nil)))
}

// send writes one message and returns the next OK.
func (c *wsClient) send(msg []byte) *nostr.OKMessage {
	c.t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
		c.t.Fatal(err)
	}
	for {
		switch m := c.next().(type) {
		case *nostr.OKMessage:
			return m
		case *nostr.AuthChallengeMessage:
			c.challenge = m.Challenge
		}
	}
}

// req returns the stored events, or the CLOSED message.
func (c *wsClient) req(f nostr.Filter) ([]*nostr.Event, string) {
	c.t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, nostr.AppendReq(nil, "s", f)); err != nil {
		c.t.Fatal(err)
	}
	var evs []*nostr.Event
	for {
		switch m := c.next().(type) {
		case *nostr.EventMessage:
			evs = append(evs, m.Event)
		case *nostr.EOSEMessage:
			_ = c.ws.WriteMessage(websocket.TextMessage, nostr.AppendClose(nil, "s"))
			return evs, ""
		case *nostr.ClosedMessage:
			return nil, m.Message
		}
	}
}

func mustKey(t *testing.T) nostr.SecretKey {
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	testKeys.Store(sk.PublicKey(), sk)
	return sk
}

func sign(t *testing.T, sk nostr.SecretKey, kind int, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: time.Now().Unix(), Tags: append(nostr.Tags{}, tags...), Content: "x"}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// TestE2EChannelsAcrossProcesses runs two buzzd processes on one PostgreSQL
// database, each mapping its own host: channel state written through one is
// read through the other, the h fence holds across processes, and both sign a
// community's state with the same key derived from BUZZ_RELAY_PRIVATE_KEY.
func TestE2EChannelsAcrossProcesses(t *testing.T) {
	dbURL := freshDatabase(t)
	master := mustKey(t)
	portA, portB := freePort(t), freePort(t)
	settings := func() map[string]string {
		return e2eSettings("DATABASE_URL", dbURL, "BUZZ_AUTO_MIGRATE", "on", "BUZZ_DATA_DIR", t.TempDir(),
			"BUZZ_RELAY_PRIVATE_KEY", master.Hex())
	}
	pa := startBuzzd(t, portA, settings())
	pb := startBuzzd(t, portB, settings())
	hostA, hostB := fmt.Sprintf("localhost:%d", portA), fmt.Sprintf("localhost:%d", portB)

	alice, mallory := mustKey(t), mustKey(t)
	// In B (through process B): a channel and a message.
	bViaB := dialAs(t, portB, hostB)
	ch := newUUID()
	if ok := bViaB.publish(sign(t, alice, 9007, nostr.Tag{"h", ch}, nostr.Tag{"name", "b-chan"})); !ok.OK {
		t.Fatalf("create: %q", ok.Message)
	}
	msg := sign(t, alice, 9, nostr.Tag{"h", ch})
	if ok := bViaB.publish(msg); !ok.OK {
		t.Fatalf("post: %q", ok.Message)
	}

	// Through process A, community B sees its channel and state.
	bViaA := dialAs(t, portA, hostB)
	got, closed := bViaA.req(nostr.Filter{Tags: map[string][]string{"h": {ch}}, Kinds: []int{9}})
	if closed != "" || len(got) != 1 || got[0].ID != msg.ID {
		t.Fatalf("B's channel read through A: %v %q", got, closed)
	}
	stateB1, _ := bViaB.req(nostr.Filter{Kinds: []int{39000}, Tags: map[string][]string{"d": {ch}}})
	stateB2, _ := bViaA.req(nostr.Filter{Kinds: []int{39000}, Tags: map[string][]string{"d": {ch}}})
	if len(stateB1) != 1 || len(stateB2) != 1 {
		t.Fatalf("state events: %d via B, %d via A", len(stateB1), len(stateB2))
	}
	signerB := stateB1[0].PubKey
	if signerB == master.PublicKey() {
		t.Fatal("channel state signed with the master key")
	}

	// Community A (through either process): B's channel is an unknown one.
	for _, port := range []int{portA, portB} {
		a := dialAs(t, port, hostA)
		f := a.publish(sign(t, mallory, 9, nostr.Tag{"h", ch}))
		u := a.publish(sign(t, mallory, 9, nostr.Tag{"h", newUUID()}))
		if f.OK || f.Message != u.Message || !strings.HasPrefix(f.Message, "restricted:") {
			t.Fatalf("foreign h via :%d: %q, unknown: %q", port, f.Message, u.Message)
		}
		if dup := a.publish(msg); dup.OK || dup.Message != u.Message {
			t.Fatalf("replay of B's message into A via :%d: %v %q", port, dup.OK, dup.Message)
		}
		if evs, closed := a.req(nostr.Filter{IDs: []string{msg.ID}}); len(evs) != 0 || closed != "" {
			t.Fatalf("B's message by id from A via :%d: %v %q", port, evs, closed)
		}
		// A's own channel: state signed with A's key, not B's.
		chA := newUUID()
		if ok := a.publish(sign(t, alice, 9007, nostr.Tag{"h", chA}, nostr.Tag{"name", "a"})); !ok.OK {
			t.Fatalf("create in A: %q", ok.Message)
		}
		stA, _ := a.req(nostr.Filter{Kinds: []int{39000}, Tags: map[string][]string{"d": {chA}}})
		if len(stA) != 1 || stA[0].PubKey == signerB || stA[0].PubKey == master.PublicKey() {
			t.Fatalf("A's state signer %v (B's %s)", stA, signerB)
		}
	}

	// NIP-11: community B's host advertises B's state signer through
	// either process (NIP-29 clients look state up by it); a host no
	// community maps, the master key.
	for _, p := range []*buzzdProc{pa, pb} {
		addr := fmt.Sprintf("127.0.0.1:%d", p.port)
		if pub, self := nip11Keys(t, addr, hostB); pub != signerB || self != signerB {
			t.Fatalf("NIP-11 for B via :%d: pubkey %s, self %s; want the signer %s", p.port, pub, self, signerB)
		}
		if pub, _ := nip11Keys(t, addr, "unmapped.example"); pub != master.PublicKey() {
			t.Fatalf("relay-wide NIP-11 pubkey = %q; want the master's", pub)
		}
	}
}
