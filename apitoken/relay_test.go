package apitoken_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/internal/fakeclock"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// bearer sends method path to r's server with Host host and the token as
// a Bearer credential, and decodes the JSON answer.
func bearer(t *testing.T, r *relaytest.Relay, token, method, host, path string, body []byte) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.Srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m, string(b)
}

// mint mints a token of c acting as pk with scopes, failing the test on
// error.
func mint(t *testing.T, svc *apitoken.Service, c tenant.CommunityID, pk string, ttl time.Duration, scopes ...apitoken.Scope) (string, store.APIToken) {
	t.Helper()
	tok, rec, err := svc.Mint(context.Background(), c, apitoken.MintRequest{PubKey: pk, Name: "bot", Scopes: scopes, ExpiresIn: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return tok, rec
}

func signed(t *testing.T, u relaytest.User, ev gonostr.Event) []byte {
	t.Helper()
	ev.CreatedAt = gonostr.Now()
	if err := ev.Sign(u.SK); err != nil {
		t.Fatal(err)
	}
	return []byte(ev.String())
}

// connectWithToken opens a go-nostr connection that authenticates as u
// with token in the AUTH event's auth_token tag; it returns the AUTH
// error ("" when accepted).
func connectWithToken(t *testing.T, r *relaytest.Relay, u relaytest.User, token string) (*gonostr.Relay, string) {
	t.Helper()
	c := r.Connect(u, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A round trip orders go-nostr's unsynchronized store of the challenge
	// before Auth reads it.
	if _, err := c.Conn.QuerySync(ctx, gonostr.Filter{Kinds: []int{0}, Limit: 1}); err != nil {
		t.Fatal(err)
	}
	err := c.Conn.Auth(ctx, func(e *gonostr.Event) error {
		e.Tags = append(e.Tags, gonostr.Tag{"auth_token", token})
		return e.Sign(u.SK)
	})
	if err != nil {
		return c.Conn, strings.TrimPrefix(err.Error(), "msg: ")
	}
	return c.Conn, ""
}

func publish(t *testing.T, rl *gonostr.Relay, u relaytest.User, ev gonostr.Event) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev.CreatedAt = gonostr.Now()
	if err := ev.Sign(u.SK); err != nil {
		t.Fatal(err)
	}
	if err := rl.Publish(ctx, ev); err != nil {
		return strings.TrimPrefix(err.Error(), "msg: ")
	}
	return ""
}

// closedReason opens a REQ and returns its CLOSED reason, or "" when the
// relay answered EOSE.
func closedReason(t *testing.T, rl *gonostr.Relay) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := rl.Subscribe(ctx, gonostr.Filters{{Kinds: []int{1}, Limit: 5}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case <-sub.Events: // stored events come before EOSE
		case reason := <-sub.ClosedReason:
			return reason
		case <-sub.EndOfStoredEvents:
			return ""
		case <-ctx.Done():
			t.Fatal("no EOSE or CLOSED")
		}
	}
}

// auditTrail returns "action reason scope" of c's token entries.
func auditTrail(t *testing.T, st relaytest.Backend, c tenant.CommunityID) []string {
	t.Helper()
	if err := st.SyncAudit(context.Background()); err != nil {
		t.Fatal(err)
	}
	es, err := st.AuditEntries(context.Background(), c, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		switch e.Action {
		case store.AuditTokenMinted, store.AuditTokenRevoked, store.AuditTokenRefused:
			var d map[string]any
			_ = json.Unmarshal(e.Detail, &d)
			line := string(e.Action)
			if r, ok := d["reason"].(string); ok {
				line += " " + r
			}
			if s, ok := d["scope"].(string); ok {
				line += " " + s
			}
			out = append(out, line)
		}
	}
	return out
}

// TestTokensAsAClient drives API tokens as clients do, on both backends:
// real HTTP with Bearer tokens, real WebSocket with go-nostr presenting
// the token in NIP-42 AUTH. A token does exactly what its scopes allow,
// is unknown on another community's host, stops working when revoked or
// expired, and its minting, refusals and revocation land in its
// community's audit chain only.
func TestTokensAsAClient(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		ctx := context.Background()
		clk := fakeclock.New(time.Now())
		svc, err := apitoken.New(st.(store.TokenStore), apitoken.WithClock(clk.Now))
		if err != nil {
			t.Fatal(err)
		}
		r := relaytest.Serve(t, st, buzz.WithAPITokens(svc))
		a, err := st.LookupHost(ctx, r.Host)
		if err != nil {
			t.Fatal(err)
		}
		const otherHost = "other.example"
		b, _, err := st.EnsureCommunity(ctx, otherHost)
		if err != nil {
			t.Fatal(err)
		}
		bot, stranger := relaytest.NewUser(), relaytest.NewUser()
		readTok, _ := mint(t, svc, a, bot.PK, 0, apitoken.MessagesRead)
		writeTok, _ := mint(t, svc, a, bot.PK, 24*time.Hour, apitoken.MessagesWrite)
		note := func() []byte { return signed(t, bot, gonostr.Event{Kind: 1, Content: "from a bot"}) }

		// HTTP: each token does what its scopes allow, nothing more.
		code, _, raw := bearer(t, r, readTok, http.MethodPost, r.Host, "/query", []byte(`{"kinds":[1]}`))
		relaytest.Eq(t, "query with messages:read ("+raw+")", code, http.StatusOK)
		code, m, _ := bearer(t, r, writeTok, http.MethodPost, r.Host, "/query", []byte(`{"kinds":[1]}`))
		relaytest.Eq(t, "query with messages:write only", code, http.StatusForbidden)
		relaytest.Eq(t, "its message", m["message"], any("restricted: insufficient scope (need messages:read)"))
		code, m, raw = bearer(t, r, writeTok, http.MethodPost, r.Host, "/events", note())
		relaytest.Eq(t, "publish with messages:write ("+raw+")", code, http.StatusOK)
		relaytest.Eq(t, "accepted", m["accepted"], any(true))
		code, m, _ = bearer(t, r, readTok, http.MethodPost, r.Host, "/events", note())
		relaytest.Eq(t, "publish with messages:read only", code, http.StatusForbidden)
		relaytest.Eq(t, "its message", m["message"], any("restricted: insufficient scope (need messages:write)"))
		code, m, _ = bearer(t, r, writeTok, http.MethodPost, r.Host, "/events", signed(t, bot, gonostr.Event{Kind: 0, Content: "{}"}))
		relaytest.Eq(t, "profile with messages:write", code, http.StatusForbidden)
		relaytest.Eq(t, "its message", m["message"], any("restricted: insufficient scope (need users:write)"))
		// Tenancy: on another community's host the token is unknown, as
		// is a token that was never minted; a malformed one likewise.
		code, m, _ = bearer(t, r, readTok, http.MethodPost, otherHost, "/query", []byte(`{}`))
		relaytest.Eq(t, "token of a on b's host", code, http.StatusUnauthorized)
		relaytest.Eq(t, "its code", m["error"], any("invalid_token"))
		unknown, _ := apitoken.Generate()
		for _, tok := range []string{unknown, "buzz_nothex", "sprout_" + strings.Repeat("0", 64)} {
			code, m, _ = bearer(t, r, tok, http.MethodPost, r.Host, "/query", []byte(`{}`))
			relaytest.Eq(t, "token "+tok, code, http.StatusUnauthorized)
			relaytest.Eq(t, "its code", m["error"], any("invalid_token"))
		}

		// WebSocket: the token in NIP-42 AUTH, signed by its pubkey.
		ws, refused := connectWithToken(t, r, bot, writeTok)
		relaytest.Eq(t, "AUTH with a token", refused, "")
		relaytest.Eq(t, "EVENT with messages:write", publish(t, ws, bot, gonostr.Event{Kind: 1, Content: "ws"}), "")
		relaytest.Eq(t, "profile", publish(t, ws, bot, gonostr.Event{Kind: 0, Content: "{}"}), "restricted: insufficient scope (need users:write)")
		relaytest.Eq(t, "REQ without messages:read", closedReason(t, ws), "restricted: insufficient scope (need messages:read)")
		rd, refused := connectWithToken(t, r, bot, readTok)
		relaytest.Eq(t, "AUTH with the read token", refused, "")
		relaytest.Eq(t, "REQ with messages:read", closedReason(t, rd), "")
		relaytest.Eq(t, "EVENT without messages:write", publish(t, rd, bot, gonostr.Event{Kind: 1, Content: "no"}), "restricted: insufficient scope (need messages:write)")
		_, refused = connectWithToken(t, r, stranger, writeTok)
		relaytest.Eq(t, "AUTH signed by another pubkey", refused, "auth-required: invalid token")
		_, refused = connectWithToken(t, r, bot, unknown)
		relaytest.Eq(t, "AUTH with an unknown token", refused, "auth-required: invalid token")

		// Revocation: refused at once over HTTP; a new AUTH is refused.
		recs, err := svc.List(ctx, a)
		if err != nil || len(recs) != 2 {
			t.Fatalf("list: %d %v", len(recs), err)
		}
		var readID string
		for _, rec := range recs {
			if len(rec.Scopes) == 1 && rec.Scopes[0] == string(apitoken.MessagesRead) {
				readID = rec.ID
			}
		}
		if _, changed, err := svc.Revoke(ctx, a, readID); err != nil || !changed {
			t.Fatalf("revoke: %v %v", changed, err)
		}
		code, m, _ = bearer(t, r, readTok, http.MethodPost, r.Host, "/query", []byte(`{}`))
		relaytest.Eq(t, "revoked token", code, http.StatusUnauthorized)
		relaytest.Eq(t, "its code", m["error"], any("token_revoked"))
		_, refused = connectWithToken(t, r, bot, readTok)
		relaytest.Eq(t, "AUTH with a revoked token", refused, "auth-required: token revoked")

		// Expiry by the service's clock.
		shortTok, _ := mint(t, svc, a, bot.PK, time.Hour, apitoken.MessagesRead)
		code, _, _ = bearer(t, r, shortTok, http.MethodPost, r.Host, "/query", []byte(`{}`))
		relaytest.Eq(t, "fresh token", code, http.StatusOK)
		clk.Advance(time.Hour)
		code, m, _ = bearer(t, r, shortTok, http.MethodPost, r.Host, "/query", []byte(`{}`))
		relaytest.Eq(t, "expired token", code, http.StatusUnauthorized)
		relaytest.Eq(t, "its code", m["error"], any("token_expired"))

		want := []string{
			"api_token_minted", "api_token_minted",
			"api_token_refused scope messages:read", "api_token_refused scope messages:write", "api_token_refused scope users:write",
			"api_token_refused scope users:write", "api_token_refused scope messages:read", "api_token_refused scope messages:write",
			"api_token_revoked", "api_token_refused revoked", "api_token_refused revoked",
			"api_token_minted", "api_token_refused expired",
		}
		got := auditTrail(t, st, a)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("audit of a:\n got %q\nwant %q", got, want)
		}
		if got := auditTrail(t, st, b); len(got) != 0 {
			t.Fatalf("b's chain holds a's token entries: %q", got)
		}
	})
}
