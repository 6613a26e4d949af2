package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/httpapi"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
)

// api is a relay served over HTTP with the HTTP API mounted
// (relaytest.Serve mounts it).
type api struct {
	*relaytest.Relay
}

// community maps host to a new community of the relay's store.
func (a api) community(t testing.TB, st relaytest.Backend, host string) {
	t.Helper()
	if _, _, err := st.EnsureCommunity(context.Background(), host); err != nil {
		t.Fatal(err)
	}
}

// signer is one key pair.
type signer struct {
	sk nostr.SecretKey
	u  relaytest.User
}

func newSigner(t testing.TB) *signer {
	t.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	return &signer{sk: sk, u: relaytest.User{SK: sk.Hex(), PK: sk.PublicKey()}}
}

func (s *signer) pub() string { return s.u.PK }

// event returns an event of s, signed.
func (s *signer) event(t testing.TB, kind int, at int64, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{CreatedAt: at, Kind: kind, Content: content, Tags: tags}
	if err := ev.Sign(s.sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

func now() int64 { return time.Now().Unix() }

// post sends body to path on the server with Host host and the given
// Authorization header ("" for none).
func (a api) post(t testing.TB, host, path, auth string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.Srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// call posts body to path on host, signed by s with NIP-98 for that host.
func (a api) call(t testing.TB, s *signer, host, path string, body []byte) (int, []byte) {
	t.Helper()
	code, _, b := a.Do(&s.u, http.MethodPost, host, "", path, body)
	return code, b
}

func (a api) callJSON(t testing.TB, s *signer, host, path string, v any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return a.call(t, s, host, path, b)
}

func (a api) publish(t testing.TB, s *signer, host string, ev *nostr.Event) httpapi.EventResult {
	t.Helper()
	code, b := a.call(t, s, host, httpapi.EventsPath, ev.AppendJSON(nil))
	var res httpapi.EventResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("/events answered %d %s", code, b)
	}
	if res.Accepted != (code == http.StatusOK) && !strings.HasPrefix(res.Message, "duplicate:") {
		t.Fatalf("/events status %d for %+v", code, res)
	}
	return res
}

func (a api) query(t testing.TB, s *signer, host, path string, filters ...nostr.Filter) []*nostr.Event {
	t.Helper()
	code, b := a.callJSON(t, s, host, path, filters)
	if code != http.StatusOK {
		t.Fatalf("/query: %d %s", code, b)
	}
	var evs []*nostr.Event
	if err := json.Unmarshal(b, &evs); err != nil {
		t.Fatalf("/query body %s: %v", b, err)
	}
	return evs
}

func (a api) count(t testing.TB, s *signer, host string, filters ...nostr.Filter) int64 {
	t.Helper()
	code, b := a.callJSON(t, s, host, httpapi.CountPath, filters)
	var res struct{ Count int64 }
	if code != http.StatusOK || json.Unmarshal(b, &res) != nil {
		t.Fatalf("/count: %d %s", code, b)
	}
	return res.Count
}

func ids(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

func chanTag(id channel.ID) nostr.Tag { return nostr.Tag{"h", id.String()} }

func hFilter(id channel.ID) nostr.Filter {
	return nostr.Filter{Tags: map[string][]string{"h": {id.String()}}}
}

func eq[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	relaytest.Eq(t, what, got, want)
}

func mustPrefix(t testing.TB, what, got, prefix string) {
	t.Helper()
	if !strings.HasPrefix(got, prefix) {
		t.Fatalf("%s: %q does not start with %q", what, got, prefix)
	}
}

// wsClient is a raw NIP-01 WebSocket client of the relay's own host.
type wsClient struct {
	t    testing.TB
	conn *websocket.Conn
}

func (a api) dial(t testing.TB) *wsClient {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(a.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &wsClient{t: t, conn: conn}
}

func (c *wsClient) send(frame []byte) {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, frame); err != nil {
		c.t.Fatal(err)
	}
}

// next reads the next message other than AUTH, as a JSON array.
func (c *wsClient) next() []json.RawMessage {
	c.t.Helper()
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			c.t.Fatal(err)
		}
		var msg []json.RawMessage
		if err := json.Unmarshal(b, &msg); err != nil || len(msg) == 0 {
			c.t.Fatalf("relay sent %s", b)
		}
		if string(msg[0]) != `"AUTH"` {
			return msg
		}
	}
}

func str(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("not a string: %s", raw)
	}
	return s
}

// mustAccept publishes ev and fails unless the relay accepts it.
func (c *wsClient) mustAccept(ev *nostr.Event) {
	c.t.Helper()
	frame, _ := json.Marshal([]any{"EVENT", json.RawMessage(ev.AppendJSON(nil))})
	c.send(frame)
	for {
		msg := c.next()
		if str(c.t, msg[0]) == "OK" && len(msg) == 4 && str(c.t, msg[1]) == ev.ID {
			if string(msg[2]) != "true" {
				c.t.Fatalf("EVENT refused: %s", msg[3])
			}
			return
		}
	}
}

// req sends a REQ and returns the events before EOSE; a CLOSED fails.
func (c *wsClient) req(sub string, filters ...nostr.Filter) []*nostr.Event {
	c.t.Helper()
	c.send(nostr.AppendReq(nil, sub, filters...))
	var out []*nostr.Event
	for {
		msg := c.next()
		switch str(c.t, msg[0]) {
		case "EVENT":
			ev, err := nostr.ParseEvent(msg[2])
			if err != nil {
				c.t.Fatal(err)
			}
			out = append(out, ev)
		case "EOSE":
			c.send([]byte(`["CLOSE","` + sub + `"]`))
			return out
		case "CLOSED":
			c.t.Fatalf("REQ %s closed: %s", sub, msg[2])
		}
	}
}

// closed sends a REQ and returns the message of the CLOSED it gets.
func (c *wsClient) closed(frame []byte, sub string) string {
	c.t.Helper()
	c.send(frame)
	for {
		msg := c.next()
		if str(c.t, msg[0]) == "CLOSED" && str(c.t, msg[1]) == sub {
			return str(c.t, msg[2])
		}
		if str(c.t, msg[0]) == "EOSE" {
			c.t.Fatalf("REQ %s was answered", sub)
		}
	}
}
