// Package relaytest runs a relay as its users do, for black-box tests of
// the public API and of the features mounted on it: a buzz.Relay over a
// real HTTP server on each backend (the embedded store as buzzd opens it by
// default, and PostgreSQL), requests signed with NIP-98, and go-nostr as
// the independent client.
package relaytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/httpapi"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

// Backend is a store with everything both backends keep.
type Backend interface {
	store.Backend
	store.ChannelStore
	store.AuditLog
	store.ThreadStore
}

// Quiet is a logger that discards everything.
func Quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// ForBackends runs fn on a new embedded store (events in the LSM engine,
// as buzzd opens it by default) and on a new PostgreSQL database (which
// pgtest requires under CI=true).
func ForBackends(t *testing.T, fn func(t *testing.T, st Backend)) {
	t.Run("embedded", func(t *testing.T) { fn(t, Embedded(t)) })
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t), postgres.WithLogger(Quiet()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		fn(t, st)
	})
}

// Embedded opens a new embedded store as buzzd opens it by default,
// closed at the end of the test.
func Embedded(t testing.TB) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(context.Background(), t.TempDir(), embedded.WithLogger(Quiet()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Relay is a relay served over HTTP; Host is the server's own host,
// mapped to a community, so go-nostr clients dialing URL reach it.
type Relay struct {
	T     testing.TB
	Relay *buzz.Relay
	Srv   *httptest.Server
	Host  string
	URL   string // ws://Host
	// leak leaves the relay and server running after the test once a
	// go-nostr client connected: go-nostr v0.52.3 races on every close of
	// a connection (its writer goroutine clears Relay.Connection while
	// close() reads it), from either side, so its connections are never
	// closed.
	leak atomic.Bool
}

// Serve maps the server's host to a community of st and serves a relay
// on st with WithStore, WithDirectory, WithChannels, WithHTTPAuth (a fresh
// NIP-98 verifier), the HTTP API (package httpapi), a quiet logger, then
// opts. It stops at the end of the test.
func Serve(t testing.TB, st store.Backend, opts ...buzz.Option) *Relay {
	t.Helper()
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	return ServeWith(t, st, append([]buzz.Option{buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithChannels(),
		buzz.WithHTTPAuth(v), buzz.WithFeature(httpapi.New()), buzz.WithLogger(Quiet())}, opts...)...)
}

// ServeWith is Serve with exactly opts.
func ServeWith(t testing.TB, st store.Backend, opts ...buzz.Option) *Relay {
	t.Helper()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	rel, err := buzz.New(opts...)
	if err != nil {
		t.Fatalf("buzz.New: %v", err)
	}
	r := &Relay{T: t, Relay: rel, Srv: srv, Host: host, URL: "ws://" + host}
	t.Cleanup(func() {
		if r.leak.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rel.Shutdown(ctx)
		srv.Close()
	})
	h = rel
	return r
}

// User is one key pair (hex).
type User struct{ SK, PK string }

// NewUser generates a key pair.
func NewUser() User {
	sk := gonostr.GeneratePrivateKey()
	pk, _ := gonostr.GetPublicKey(sk)
	return User{sk, pk}
}

// NIP98 returns an Authorization value signed by u for method and url,
// with a payload tag when body is not empty and a nonce that keeps two
// tokens of one second distinct.
func (u User) NIP98(t testing.TB, method, url string, body []byte) string {
	t.Helper()
	n := make([]byte, 8)
	_, _ = rand.Read(n)
	tags := gonostr.Tags{{"u", url}, {"method", method}, {"nonce", hex.EncodeToString(n)}}
	if len(body) > 0 {
		sum := sha256.Sum256(body)
		tags = append(tags, gonostr.Tag{"payload", hex.EncodeToString(sum[:])})
	}
	ev := gonostr.Event{Kind: 27235, CreatedAt: gonostr.Now(), Tags: tags}
	if err := ev.Sign(u.SK); err != nil {
		t.Fatal(err)
	}
	return "Nostr " + base64.StdEncoding.EncodeToString([]byte(ev.String()))
}

// Do sends method path (with its query) to the server with Host host;
// signer, when not nil, signs it with NIP-98 for http://signedHost+path
// (signedHost "" means host). It returns the status, headers and body.
func (r *Relay) Do(signer *User, method, host, signedHost, path string, body []byte) (int, http.Header, []byte) {
	r.T.Helper()
	req, err := http.NewRequest(method, r.Srv.URL+path, bytes.NewReader(body))
	if err != nil {
		r.T.Fatal(err)
	}
	req.Host = host
	if signedHost == "" {
		signedHost = host
	}
	if signer != nil {
		req.Header.Set("Authorization", signer.NIP98(r.T, method, "http://"+signedHost+path, body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// Publish signs ev as u and publishes it over a new go-nostr connection
// (left open: see Relay.leak); it returns "" when accepted, else the
// relay's message.
func (r *Relay) Publish(u User, ev gonostr.Event) string {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.leak.Store(true)
	rl, err := gonostr.RelayConnect(ctx, r.URL)
	if err != nil {
		r.T.Fatal(err)
	}
	if err := ev.Sign(u.SK); err != nil {
		r.T.Fatal(err)
	}
	if err := rl.Publish(ctx, ev); err != nil {
		return strings.TrimPrefix(err.Error(), "msg: ")
	}
	return ""
}

// Eq fails t when got is not want.
func Eq[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// Client is one go-nostr connection of one user.
type Client struct {
	T    testing.TB
	User User
	Conn *gonostr.Relay
}

// Connect opens a go-nostr connection to the relay as u, authenticated
// with NIP-42 when auth is true. It is never closed (see Relay.leak).
func (r *Relay) Connect(u User, auth bool) *Client {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.leak.Store(true)
	rl, err := gonostr.RelayConnect(ctx, r.URL)
	if err != nil {
		r.T.Fatal(err)
	}
	if auth {
		// The relay sends its challenge as the connection opens; go-nostr's
		// read loop stores it unsynchronized, so a round trip first orders
		// that write before Auth reads it.
		if _, err := rl.QuerySync(ctx, gonostr.Filter{Kinds: []int{0}, Limit: 1}); err != nil {
			r.T.Fatalf("round trip before AUTH: %v", err)
		}
		if err := rl.Auth(ctx, func(e *gonostr.Event) error { return e.Sign(u.SK) }); err != nil {
			r.T.Fatalf("AUTH: %v", err)
		}
	}
	return &Client{T: r.T, User: u, Conn: rl}
}

// Publish signs ev as the client's user and publishes it; it returns ""
// when accepted, else the relay's message.
func (c *Client) Publish(ev gonostr.Event) string {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ev.CreatedAt == 0 {
		ev.CreatedAt = gonostr.Now()
	}
	if err := ev.Sign(c.User.SK); err != nil {
		c.T.Fatal(err)
	}
	if err := c.Conn.Publish(ctx, ev); err != nil {
		return strings.TrimPrefix(err.Error(), "msg: ")
	}
	return ""
}

// Must publishes ev and fails the test when it is refused.
func (c *Client) Must(what string, ev gonostr.Event) {
	c.T.Helper()
	if msg := c.Publish(ev); msg != "" {
		c.T.Fatalf("%s refused: %s", what, msg)
	}
}
