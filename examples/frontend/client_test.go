package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
)

// The tests' HTTP client. Events and NIP-98 tokens are signed with an
// independent Nostr library (go-nostr), not buzz's own.

// user is a key that signs events and NIP-98 tokens.
type user struct{ sk, pk string }

func newUser(t testing.TB) user {
	t.Helper()
	sk := gonostr.GeneratePrivateKey()
	pk, err := gonostr.GetPublicKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return user{sk, pk}
}

// event signs an event of kind created now.
func (u user) event(t testing.TB, kind int, content string, tags ...[]string) *gonostr.Event {
	t.Helper()
	ev := &gonostr.Event{Kind: kind, CreatedAt: gonostr.Now(), Content: content}
	for _, tag := range tags {
		ev.Tags = append(ev.Tags, gonostr.Tag(tag))
	}
	if err := ev.Sign(u.sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// token is a NIP-98 Authorization value for method on rawURL with body.
func (u user) token(t testing.TB, method, rawURL string, body []byte) string {
	t.Helper()
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	tags := [][]string{{"u", rawURL}, {"method", method}, {"nonce", hex.EncodeToString(nonce)}}
	if body != nil {
		sum := sha256.Sum256(body)
		tags = append(tags, []string{"payload", hex.EncodeToString(sum[:])})
	}
	b, err := json.Marshal(u.event(t, 27235, "", tags...))
	if err != nil {
		t.Fatal(err)
	}
	return "Nostr " + base64.StdEncoding.EncodeToString(b)
}

// client talks to a frontend at base (http://addr) with any Host.
type client struct {
	t    testing.TB
	base string
}

// answer is a response's status and body.
type answer struct {
	Status int
	Body   string
}

// do sends a request to path with Host host, signed by as when it is not
// nil (for the URL the frontend expects: http://host/path?query).
func (c client) do(method, host, path string, body []byte, as *user) (*http.Response, answer) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Host = host
	if as != nil {
		req.Header.Set("Authorization", as.token(c.t, method, "http://"+host+path, body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, answer{Status: resp.StatusCode}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, answer{resp.StatusCode, string(b)}
}

// result is POST /events' answer.
type result struct {
	EventID  string `json:"event_id"`
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

// post publishes ev to host.
func (c client) post(host string, ev *gonostr.Event, as *user) (answer, result) {
	c.t.Helper()
	b, _ := json.Marshal(ev)
	_, a := c.do(http.MethodPost, host, "/events", b, as)
	var r result
	_ = json.Unmarshal([]byte(a.Body), &r)
	return a, r
}

// mustPost publishes ev and fails unless it was accepted.
func (c client) mustPost(host string, ev *gonostr.Event, as *user) {
	c.t.Helper()
	if a, r := c.post(host, ev, as); !r.Accepted {
		c.t.Fatalf("POST kind %d to %s: %d %s", ev.Kind, host, a.Status, a.Body)
	}
}

func filterPath(path string, f gonostr.Filter) string {
	b, _ := json.Marshal(f)
	return path + "?" + url.Values{"filter": {string(b)}}.Encode()
}

// timeline reads f on host.
func (c client) timeline(host string, f gonostr.Filter, as *user) (answer, []gonostr.Event) {
	c.t.Helper()
	_, a := c.do(http.MethodGet, host, filterPath("/timeline", f), nil, as)
	var evs []gonostr.Event
	if a.Status == http.StatusOK {
		if err := json.Unmarshal([]byte(a.Body), &evs); err != nil {
			c.t.Fatalf("timeline body %q: %v", a.Body, err)
		}
	}
	return a, evs
}

// sse is an open /stream.
type sse struct {
	t    testing.TB
	resp *http.Response
	r    *bufio.Reader
	msgs chan sseMsg
}

type sseMsg struct{ event, data string }

// stream opens /stream of f on host; a refusal comes back as answer.
func (c client) stream(host string, f gonostr.Filter, as *user) (*sse, answer) {
	c.t.Helper()
	resp, a := c.do(http.MethodGet, host, filterPath("/stream", f), nil, as)
	if a.Body != "" || a.Status != http.StatusOK {
		return nil, a
	}
	s := &sse{t: c.t, resp: resp, r: bufio.NewReader(resp.Body), msgs: make(chan sseMsg, 1024)}
	c.t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.msgs)
		var m sseMsg
		for {
			line, err := s.r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				m.event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				m.data = line[len("data: "):]
			case line == "":
				s.msgs <- m
				m = sseMsg{}
			}
		}
	}()
	return s, a
}

// next returns the next message, failing after 10 seconds.
func (s *sse) next() sseMsg {
	s.t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			s.t.Fatal("stream ended")
		}
		return m
	case <-time.After(10 * time.Second):
		s.t.Fatal("no stream message within 10 s")
	}
	return sseMsg{}
}

// stored reads the stored events up to "eose".
func (s *sse) stored() []gonostr.Event {
	s.t.Helper()
	var evs []gonostr.Event
	for {
		m := s.next()
		switch m.event {
		case "eose":
			return evs
		case "event":
			evs = append(evs, s.parse(m))
		default:
			s.t.Fatalf("before eose: %+v", m)
		}
	}
}

// nextEvent returns the next live event; it fails on anything else.
func (s *sse) nextEvent() gonostr.Event {
	s.t.Helper()
	m := s.next()
	if m.event != "event" {
		s.t.Fatalf("want an event, got %+v", m)
	}
	return s.parse(m)
}

func (s *sse) parse(m sseMsg) gonostr.Event {
	s.t.Helper()
	var ev gonostr.Event
	if err := json.Unmarshal([]byte(m.data), &ev); err != nil {
		s.t.Fatalf("event %q: %v", m.data, err)
	}
	return ev
}

func ids(evs []gonostr.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}
