// Package wstest is the examples' smoke-test client: a plain WebSocket
// Nostr client (gorilla/websocket and package nostr) that a test can close
// at any time.
//
// It depends on nostr and the WebSocket client only: it must not import the
// relay, so it checks the examples from outside.
package wstest

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nostr"
)

// Client is one connection to a relay, used by one test goroutine.
type Client struct {
	t         testing.TB
	url       string
	ws        *websocket.Conn
	Challenge string // the relay's NIP-42 challenge
}

// Dial connects to url (with header, which may set "Host") and reads the
// relay's AUTH challenge. The connection is closed when the test ends.
func Dial(t testing.TB, url string, header http.Header) *Client {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, header)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	c := &Client{t: t, url: url, ws: ws}
	ch, ok := c.Next().(*nostr.AuthChallengeMessage)
	if !ok {
		t.Fatal("the relay's first message is not an AUTH challenge")
	}
	c.Challenge = ch.Challenge
	return c
}

// Close closes the connection.
func (c *Client) Close() { _ = c.ws.Close() }

// Send writes one raw message.
func (c *Client) Send(msg []byte) {
	c.t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
		c.t.Fatal(err)
	}
}

// Next reads one message, waiting at most 10 seconds.
func (c *Client) Next() nostr.RelayMessage {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatal(err)
	}
	m, err := nostr.ParseRelayMessage(b)
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// Event returns an event of kind signed by sk.
func Event(t testing.TB, sk nostr.SecretKey, kind int, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: time.Now().Unix(), Content: content, Tags: tags}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// Publish sends ev and returns the relay's OK for it.
func (c *Client) Publish(ev *nostr.Event) *nostr.OKMessage {
	c.t.Helper()
	c.Send(nostr.AppendEventEnvelope(nil, ev.AppendJSON(nil)))
	return c.ok(ev.ID)
}

func (c *Client) ok(id string) *nostr.OKMessage {
	c.t.Helper()
	for {
		if ok, is := c.Next().(*nostr.OKMessage); is && ok.EventID == id {
			return ok
		}
	}
}

// Auth authenticates as sk (NIP-42) and returns the relay's OK.
func (c *Client) Auth(sk nostr.SecretKey) *nostr.OKMessage {
	c.t.Helper()
	ev := Event(c.t, sk, nostr.KindClientAuth, "", nostr.Tag{"relay", c.url}, nostr.Tag{"challenge", c.Challenge})
	c.Send(nostr.AppendAuth(nil, ev.AppendJSON(nil)))
	return c.ok(ev.ID)
}

// Req subscribes with filters and returns the stored events and, when the
// relay refused, the CLOSED reason ("" after EOSE).
func (c *Client) Req(sub string, filters ...nostr.Filter) ([]*nostr.Event, string) {
	c.t.Helper()
	c.Send(nostr.AppendReq(nil, sub, filters...))
	var evs []*nostr.Event
	for {
		switch m := c.Next().(type) {
		case *nostr.EventMessage:
			if m.SubID == sub {
				evs = append(evs, m.Event)
			}
		case *nostr.EOSEMessage:
			if m.SubID == sub {
				return evs, ""
			}
		case *nostr.ClosedMessage:
			if m.SubID == sub {
				return evs, m.Message
			}
		}
	}
}

// CloseCode reads until the relay closes the connection, waiting at most 10
// seconds, and returns the close frame's code; it fails the test when the
// connection ends without one.
func (c *Client) CloseCode() int {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := c.ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				c.t.Fatalf("the connection ended without a close frame: %v", err)
			}
			return ce.Code
		}
	}
}
