// Package rawclient is a WebSocket client speaking raw Nostr frames, and
// signers whose keys it knows, for tests that need to see every frame a
// relay sends, in order, which an independent client (go-nostr) hides. It
// depends on the relay's nostr and ingest packages only, so the relay's own
// internal tests and relaytest's share it.
package rawclient

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
)

// Client is a WebSocket client speaking raw frames. Each read waits at
// most five seconds and fails the test after.
type Client struct {
	T         testing.TB
	WS        *websocket.Conn
	Challenge string // the relay's NIP-42 challenge, read as the connection opened
	// RelayURL is the URL the connection's AUTH events name ("" when
	// unknown: Publish then never authenticates by itself).
	RelayURL string
	mu       sync.Mutex
}

// Dial connects to url with d (nil: websocket.DefaultDialer) and the
// given headers (a Host header names another community of the same relay),
// reads the AUTH challenge the relay opens with, and closes the
// connection at the end of the test. relayURL is what the client's AUTH
// events name.
func Dial(t testing.TB, d *websocket.Dialer, url string, header http.Header, relayURL string) *Client {
	t.Helper()
	if d == nil {
		d = websocket.DefaultDialer
	}
	ws, resp, err := d.Dial(url, header)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s (Host %q): %v (status %d)", url, header.Get("Host"), err, status)
	}
	t.Cleanup(func() { _ = ws.Close() })
	c := &Client{T: t, WS: ws, RelayURL: relayURL}
	m := c.Next()
	ch, ok := m.(*nostr.AuthChallengeMessage)
	if !ok {
		t.Fatalf("first message = %#v, want AUTH challenge", m)
	}
	if len(ch.Challenge) != 64 {
		t.Fatalf("challenge %q is not 32 bytes of hex", ch.Challenge)
	}
	c.Challenge = ch.Challenge
	return c
}

// SendRaw writes one text frame.
func (c *Client) SendRaw(b []byte) {
	c.T.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.WS.WriteMessage(websocket.TextMessage, b); err != nil {
		c.T.Fatalf("write: %v", err)
	}
}

// Send writes a JSON array of the given elements.
func (c *Client) Send(elems ...any) {
	c.T.Helper()
	b, err := json.Marshal(elems)
	if err != nil {
		c.T.Fatal(err)
	}
	c.SendRaw(b)
}

// SendEvent writes an EVENT frame for ev.
func (c *Client) SendEvent(ev *nostr.Event) {
	c.T.Helper()
	c.SendRaw(nostr.AppendEventEnvelope(nil, ev.AppendJSON(nil)))
}

// NextRaw reads one frame, waiting at most five seconds.
func (c *Client) NextRaw() ([]byte, error) {
	_ = c.WS.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := c.WS.ReadMessage()
	return b, err
}

// Next reads and parses one message.
func (c *Client) Next() nostr.RelayMessage {
	c.T.Helper()
	b, err := c.NextRaw()
	if err != nil {
		c.T.Fatalf("read: %v", err)
	}
	m, err := nostr.ParseRelayMessage(b)
	if err != nil {
		c.T.Fatalf("relay sent unparsable %q: %v", b, err)
	}
	return m
}

// ExpectOK reads up to the next OK, skipping AUTH challenges, and fails
// unless it is for id.
func (c *Client) ExpectOK(id string) *nostr.OKMessage {
	c.T.Helper()
	for {
		m := c.Next()
		if ok, isOK := m.(*nostr.OKMessage); isOK {
			if ok.EventID != id {
				c.T.Fatalf("OK for %s, want %s", ok.EventID, id)
			}
			return ok
		}
		if _, isAuth := m.(*nostr.AuthChallengeMessage); isAuth {
			continue
		}
		c.T.Fatalf("got %#v, want OK", m)
	}
}

// Auth sends ev as an AUTH and returns its OK.
func (c *Client) Auth(ev *nostr.Event) *nostr.OKMessage {
	c.T.Helper()
	c.SendRaw(nostr.AppendAuth(nil, ev.AppendJSON(nil)))
	return c.ExpectOK(ev.ID)
}

// AuthAs authenticates c as s for ws://host, failing the test when the
// relay refuses.
func (c *Client) AuthAs(s *Signer, host string) {
	c.T.Helper()
	ev := s.Event(nostr.KindClientAuth, time.Now().Unix(), "", nostr.Tag{"challenge", c.Challenge}, nostr.Tag{"relay", "ws://" + host})
	if ok := c.Auth(ev); !ok.OK {
		c.T.Fatalf("AUTH refused: %s", ok.Message)
	}
}

// Publish sends ev and returns its OK. Like a standard client (nostr-tools
// with onauth, go-nostr), when the relay answers that ev needs its author
// authenticated (an authority event: ingest.MsgAuthorityAuth, or
// MsgAuthorityNotAuthor on a connection authenticated as someone else), it
// authenticates as ev's author — if that key is a Signer's — with the
// connection's challenge, and sends ev again. An attacker's client, which
// cannot sign as the author, is PublishOnce.
func (c *Client) Publish(ev *nostr.Event) *nostr.OKMessage {
	c.T.Helper()
	ok := c.PublishOnce(ev)
	if ok.OK || (ok.Message != ingest.MsgAuthorityAuth && ok.Message != ingest.MsgAuthorityNotAuthor) || c.RelayURL == "" {
		return ok
	}
	v, known := signers.Load(ev.PubKey)
	if !known {
		return ok
	}
	auth := &nostr.Event{Kind: nostr.KindClientAuth, CreatedAt: time.Now().Unix(),
		Tags: nostr.Tags{{"challenge", c.Challenge}, {"relay", c.RelayURL}}}
	if err := auth.Sign(v.(nostr.SecretKey)); err != nil {
		c.T.Fatal(err)
	}
	if a := c.Auth(auth); !a.OK {
		c.T.Fatalf("AUTH as the author of %s refused: %s", ev.ID, a.Message)
	}
	return c.PublishOnce(ev)
}

// PublishOnce sends ev and returns its OK, as a client that never
// authenticates by itself.
func (c *Client) PublishOnce(ev *nostr.Event) *nostr.OKMessage {
	c.T.Helper()
	c.SendEvent(ev)
	return c.ExpectOK(ev.ID)
}

// MustAccept publishes ev and fails the test when it is refused.
func (c *Client) MustAccept(ev *nostr.Event) {
	c.T.Helper()
	if ok := c.Publish(ev); !ok.OK {
		c.T.Fatalf("event refused: %q", ok.Message)
	}
}

// Req sends a REQ, collects the stored events up to EOSE and CLOSEs the
// subscription. It fails on CLOSED.
func (c *Client) Req(sub string, filters ...nostr.Filter) []*nostr.Event {
	c.T.Helper()
	evs := c.Subscribe(sub, filters...)
	c.SendRaw(nostr.AppendClose(nil, sub))
	return evs
}

// Subscribe is Req without the CLOSE: the subscription stays open.
func (c *Client) Subscribe(sub string, filters ...nostr.Filter) []*nostr.Event {
	c.T.Helper()
	c.SendRaw(nostr.AppendReq(nil, sub, filters...))
	return c.UntilEOSE(sub)
}

// ExpectOKs reads one accepting OK for each of evs, in any order.
func (c *Client) ExpectOKs(evs []*nostr.Event) {
	c.T.Helper()
	want := make(map[string]bool, len(evs))
	for _, e := range evs {
		want[e.ID] = true
	}
	for len(want) > 0 {
		m := c.Next()
		ok, isOK := m.(*nostr.OKMessage)
		if !isOK {
			c.T.Fatalf("got %#v, want OK", m)
		}
		if !want[ok.EventID] {
			c.T.Fatalf("unexpected OK for %s", ok.EventID)
		}
		if !ok.OK {
			c.T.Fatalf("event %s refused: %s", ok.EventID, ok.Message)
		}
		delete(want, ok.EventID)
	}
}

// UntilEOSE collects the events of sub up to its EOSE; any other message
// fails the test.
func (c *Client) UntilEOSE(sub string) []*nostr.Event {
	c.T.Helper()
	var evs []*nostr.Event
	for {
		switch m := c.Next().(type) {
		case *nostr.EventMessage:
			if m.SubID != sub {
				c.T.Fatalf("event for sub %q, want %q", m.SubID, sub)
			}
			evs = append(evs, m.Event)
		case *nostr.EOSEMessage:
			if m.SubID != sub {
				c.T.Fatalf("EOSE for %q, want %q", m.SubID, sub)
			}
			return evs
		default:
			c.T.Fatalf("got %#v while waiting for EOSE of %q", m, sub)
		}
	}
}

// NextLive waits for a live EVENT on sub, skipping OKs and AUTH
// challenges; any other message fails the test.
func (c *Client) NextLive(sub string) *nostr.Event {
	c.T.Helper()
	for {
		switch m := c.Next().(type) {
		case *nostr.EventMessage:
			if m.SubID == sub {
				return m.Event
			}
		case *nostr.OKMessage, *nostr.AuthChallengeMessage:
		default:
			c.T.Fatalf("got %#v, want an event for %q", m, sub)
		}
	}
}

// ExpectNext checks that the next message is the event id on sub. Tests
// use it as a barrier for a negative check: publish a sentinel the
// subscription matches after whatever must not be delivered; any such
// delivery arrives before the sentinel (a connection's messages are
// ordered) and fails here, with no wait for a silence.
func (c *Client) ExpectNext(sub, id string) {
	c.T.Helper()
	m, ok := c.Next().(*nostr.EventMessage)
	if !ok || m.SubID != sub || m.Event.ID != id {
		c.T.Fatalf("got %#v, want the sentinel %s on %q", m, id, sub)
	}
}

// ExpectClosed reads the next message, skipping AUTH challenges, and checks
// it is CLOSED for sub with the given prefix; it returns the message.
func (c *Client) ExpectClosed(sub, prefix string) string {
	c.T.Helper()
	for {
		m := c.Next()
		if _, isAuth := m.(*nostr.AuthChallengeMessage); isAuth {
			continue
		}
		cl, ok := m.(*nostr.ClosedMessage)
		if !ok {
			c.T.Fatalf("got %#v, want CLOSED", m)
		}
		if cl.SubID != sub || !strings.HasPrefix(cl.Message, prefix) {
			c.T.Fatalf("CLOSED %q %q, want sub %q prefix %q", cl.SubID, cl.Message, sub, prefix)
		}
		return cl.Message
	}
}

// signers holds the secret key of every Signer, by public key, so that a
// client asked to authenticate as an event's author can (see Publish).
// Keys are random per Signer, so tests running in parallel never collide.
var signers sync.Map // pubkey -> nostr.SecretKey

// Signer creates signed events for one key.
type Signer struct {
	T  testing.TB
	SK nostr.SecretKey
}

// NewSigner generates a key, known to every Client's Publish.
func NewSigner(t testing.TB) *Signer {
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	RegisterKey(sk)
	return &Signer{T: t, SK: sk}
}

// RegisterKey makes sk known to Client.Publish, which authenticates as
// the author of an event that needs it.
func RegisterKey(sk nostr.SecretKey) { signers.Store(sk.PublicKey(), sk) }

// Pub is the signer's public key (hex).
func (s *Signer) Pub() string { return s.SK.PublicKey() }

// Event returns a signed event of the signer.
func (s *Signer) Event(kind int, createdAt int64, content string, tags ...nostr.Tag) *nostr.Event {
	s.T.Helper()
	if tags == nil {
		tags = nostr.Tags{}
	}
	ev := &nostr.Event{Kind: kind, CreatedAt: createdAt, Content: content, Tags: tags}
	if err := ev.Sign(s.SK); err != nil {
		s.T.Fatal(err)
	}
	return ev
}
