package operator_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/operator/optest"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

const (
	apiOrigin = "https://ops.example"
	apiHost   = "ops.example"
	bootHost  = "relay.example"
	maxOwned  = 2
)

type backend interface {
	optest.Backend
	store.Backend
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// env is a real relay behind the operator API on one HTTP server.
type env struct {
	t        *testing.T
	st       backend
	srv      *httptest.Server
	relay    *buzz.Relay
	dir      *tenant.CachingDirectory
	op       nostr.SecretKey // an operator
	stranger nostr.SecretKey // valid keys, not an operator
	bootID   tenant.CommunityID
}

func openSQLite(t *testing.T) backend { return openSQLiteB(t) }

func openSQLiteB(t testing.TB) backend {
	s, err := embedded.Open(context.Background(), filepath.Join(t.TempDir(), "buzz.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openPostgres(t *testing.T) backend {
	s, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// forEachBackend runs fn against the embedded store and PostgreSQL.
func forEachBackend(t *testing.T, fn func(t *testing.T, open func(t *testing.T) backend)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, openSQLite) })
	t.Run("postgres", func(t *testing.T) { fn(t, openPostgres) })
}

func key(t *testing.T) nostr.SecretKey {
	t.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func newEnv(t *testing.T, st backend, extra ...operator.Option) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, st: st, op: key(t), stranger: key(t)}
	var err error
	e.bootID, _, err = st.EnsureCommunity(ctx, bootHost)
	if err != nil {
		t.Fatal(err)
	}
	e.dir, err = tenant.NewCachingDirectory(st)
	if err != nil {
		t.Fatal(err)
	}
	e.relay, err = buzz.New(buzz.WithStore(st), buzz.WithChannels(), buzz.WithDirectory(e.dir), buzz.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	opts := append([]operator.Option{
		operator.WithOperators(e.op.PublicKey()),
		operator.WithAPIOrigin(apiOrigin),
		operator.WithStore(st),
		operator.WithVerifier(v),
		operator.WithMaxCommunitiesPerOwner(maxOwned),
		operator.WithProtectedCommunities(e.bootID),
		operator.WithDisconnector(e.relay),
		operator.WithHostInvalidator(e.dir.Invalidate),
		operator.WithLogger(quiet()),
	}, extra...)
	h, err := operator.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(h.Wrap(e.relay))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.relay.Shutdown(ctx)
		e.srv.Close()
	})
	return e
}

// token builds a signed NIP-98 Authorization header.
type token struct {
	sk        nostr.SecretKey
	url       string
	method    string
	body      []byte
	createdAt time.Time
	noPayload bool
}

func (tk token) header(t *testing.T) string {
	t.Helper()
	created := tk.createdAt
	if created.IsZero() {
		created = time.Now()
	}
	// A nonce keeps two otherwise equal requests in one second distinct
	// events (the replay guard refuses an event id seen before).
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	tags := nostr.Tags{{"u", tk.url}, {"method", tk.method}, {"nonce", hex.EncodeToString(nonce[:])}}
	if !tk.noPayload && tk.method == http.MethodPost {
		sum := sha256.Sum256(tk.body)
		tags = append(tags, nostr.Tag{"payload", hex.EncodeToString(sum[:])})
	}
	ev := &nostr.Event{Kind: nostr.KindHTTPAuth, CreatedAt: created.Unix(), Tags: tags}
	if err := ev.Sign(tk.sk); err != nil {
		t.Fatal(err)
	}
	return "Nostr " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil))
}

// call sends method path (with query) to the server with the given Host
// header, body and Authorization ("" for none).
func (e *env) call(host, method, path string, body []byte, auth string) (int, []byte, http.Header) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = host
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// api sends a correctly signed request as sk to the API origin.
func (e *env) api(sk nostr.SecretKey, method, path string, body any) (int, map[string]any) {
	e.t.Helper()
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			e.t.Fatal(err)
		}
	}
	auth := token{sk: sk, url: apiOrigin + path, method: method, body: raw}.header(e.t)
	status, b, _ := e.call(apiHost, method, path, raw, auth)
	return status, decodeObj(e.t, b)
}

func decodeObj(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("response is not a JSON object: %q", b)
	}
	return m
}

func expect(t *testing.T, status int, body map[string]any, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, body %v; want %d", status, body, wantStatus)
	}
	if wantCode != "" && body["error"] != wantCode {
		t.Fatalf("error %v (%v); want %q", body["error"], body["message"], wantCode)
	}
	if wantCode != "" {
		if msg, _ := body["message"].(string); msg == "" {
			t.Fatalf("error without message: %v", body)
		}
	}
}

// dial opens a WebSocket to host through the server; it returns the HTTP
// status when the upgrade is refused.
func (e *env) dial(host string) (*websocket.Conn, int) {
	e.t.Helper()
	hdr := http.Header{}
	hdr.Set("Host", host)
	ws, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.srv.URL, "http"), hdr)
	if err != nil {
		if resp == nil {
			e.t.Fatalf("dial %s: %v", host, err)
		}
		return nil, resp.StatusCode
	}
	e.t.Cleanup(func() { ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); err != nil {
		e.t.Fatalf("read AUTH challenge: %v", err)
	}
	return ws, http.StatusSwitchingProtocols
}

func closeCode(t *testing.T, ws *websocket.Conn) int {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			t.Fatalf("connection ended without close frame: %v", err)
		}
	}
}

func TestOperatorAPI(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(t *testing.T) backend) {
		e := newEnv(t, open(t))
		alice, bob := key(t).PublicKey(), key(t).PublicKey()

		// Create, idempotent repeat, create_only conflict.
		st, body := e.api(e.op, "POST", "/operator/communities", map[string]any{"host": "Team.Example:443", "initial_owner_pubkey": alice})
		expect(t, st, body, http.StatusCreated, "")
		if body["status"] != "created" || body["host"] != "team.example" || body["owner_pubkey"] != alice {
			t.Fatalf("create = %v", body)
		}
		teamID := body["community_id"].(string)
		st, body = e.api(e.op, "POST", "/operator/communities", map[string]any{"host": "team.example", "initial_owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "")
		if body["status"] != "existed" || body["community_id"] != teamID {
			t.Fatalf("repeat = %v", body)
		}
		st, body = e.api(e.op, "POST", "/operator/communities", map[string]any{"host": "team.example", "create_only": true})
		expect(t, st, body, http.StatusConflict, operator.CodeCommunityExists)
		st, body = e.api(e.op, "POST", "/operator/communities", map[string]any{"host": "team.example", "initial_owner_pubkey": bob})
		expect(t, st, body, http.StatusConflict, operator.CodeOwnerConflict)

		// The new community is reachable at once (negative cache dropped).
		if _, st := e.dial("team.example"); st != http.StatusSwitchingProtocols {
			t.Fatalf("dial new community: %d", st)
		}

		// Quota: alice may hold two.
		st, body = e.api(e.op, "POST", "/operator/communities", map[string]any{"host": "two.example", "initial_owner_pubkey": alice, "create_only": true})
		expect(t, st, body, http.StatusCreated, "")
		st, body = e.api(e.op, "POST", "/operator/communities", map[string]any{"host": "three.example", "initial_owner_pubkey": alice})
		expect(t, st, body, http.StatusConflict, operator.CodeLimitReached)
		if body["max_communities_per_owner"] != float64(maxOwned) {
			t.Fatalf("limit_reached without max_communities_per_owner: %v", body)
		}

		// List.
		st, body = e.api(e.op, "GET", "/operator/communities?owner_pubkey="+alice, nil)
		expect(t, st, body, http.StatusOK, "")
		list := body["communities"].([]any)
		if body["owner_pubkey"] != alice || body["max_communities_per_owner"] != float64(maxOwned) || len(list) != 2 {
			t.Fatalf("list = %v", body)
		}
		first := list[0].(map[string]any)
		if first["community_id"] != teamID || first["host"] != "team.example" || first["archived_at"] != nil {
			t.Fatalf("list[0] = %v", first)
		}
		if _, err := time.Parse(time.RFC3339, first["created_at"].(string)); err != nil {
			t.Fatalf("created_at: %v", err)
		}
		st, body = e.api(e.op, "GET", "/operator/communities?owner_pubkey="+bob, nil)
		expect(t, st, body, http.StatusOK, "")
		if l, ok := body["communities"].([]any); !ok || len(l) != 0 {
			t.Fatalf("empty list = %v", body)
		}

		// Availability: normalized host, alias, free host.
		st, body = e.api(e.op, "GET", "/operator/communities/availability?host=TEAM.example.", nil)
		expect(t, st, body, http.StatusOK, "")
		if body["available"] != false || body["community_id"] != teamID || body["normalized_host"] != "team.example" || body["host"] != "TEAM.example." {
			t.Fatalf("availability of taken host = %v", body)
		}
		team, err := e.st.CommunityByHost(context.Background(), "team.example")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.st.AddHostAlias(context.Background(), "alias.example", team.ID); err != nil {
			t.Fatal(err)
		}
		st, body = e.api(e.op, "GET", "/operator/communities/availability?host=alias.example", nil)
		expect(t, st, body, http.StatusOK, "")
		if body["available"] != false || body["community_id"] != teamID {
			t.Fatalf("availability of alias = %v", body)
		}
		st, body = e.api(e.op, "GET", "/operator/communities/availability?host=free.example:8443", nil)
		expect(t, st, body, http.StatusOK, "")
		if body["available"] != true || body["community_id"] != nil || body["normalized_host"] != "free.example:8443" {
			t.Fatalf("availability of free host = %v", body)
		}

		// Archive: the relay stops serving the host and its sockets close.
		ws, _ := e.dial("team.example")
		wsAlias, _ := e.dial("alias.example")
		wsBoot, _ := e.dial(bootHost)
		st, body = e.api(e.op, "POST", "/operator/communities/archive", map[string]any{"host": "team.example", "owner_pubkey": bob})
		expect(t, st, body, http.StatusConflict, operator.CodeOwnerConflict)
		st, body = e.api(e.op, "POST", "/operator/communities/archive", map[string]any{"host": "team.example", "owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "")
		if body["status"] != "archived" || body["community_id"] != teamID || body["archived_at"] == nil || body["host"] != "team.example" {
			t.Fatalf("archive = %v", body)
		}
		for _, c := range []*websocket.Conn{ws, wsAlias} {
			if code := closeCode(t, c); code != buzz.CloseCommunityGone {
				t.Fatalf("archived community socket closed with %d", code)
			}
		}
		if _, st := e.dial("team.example"); st != http.StatusNotFound {
			t.Fatalf("dial archived community: %d; want 404", st)
		}
		// The boot community's socket is untouched.
		if err := wsBoot.WriteMessage(websocket.TextMessage, []byte(`["REQ","s",{"limit":1}]`)); err != nil {
			t.Fatal(err)
		}
		if _, msg, err := wsBoot.ReadMessage(); err != nil || string(msg) != `["EOSE","s"]` {
			t.Fatalf("boot community socket after archive: %q, %v", msg, err)
		}
		st, body = e.api(e.op, "POST", "/operator/communities/archive", map[string]any{"host": "team.example", "owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "")
		if body["status"] != "already_archived" {
			t.Fatalf("archive again = %v", body)
		}
		// Archived communities free quota.
		st, body = e.api(e.op, "POST", "/operator/communities", map[string]any{"host": "three.example", "initial_owner_pubkey": alice})
		expect(t, st, body, http.StatusCreated, "")
		st, body = e.api(e.op, "POST", "/operator/communities/unarchive", map[string]any{"host": "team.example", "owner_pubkey": alice})
		expect(t, st, body, http.StatusConflict, operator.CodeLimitReached)
		st, body = e.api(e.op, "POST", "/operator/communities/archive", map[string]any{"host": "three.example", "owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "")

		// Unarchive: reachable again at once (cache invalidated).
		st, body = e.api(e.op, "POST", "/operator/communities/unarchive", map[string]any{"host": "team.example", "owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "")
		if body["status"] != "unarchived" || body["archived_at"] != nil {
			t.Fatalf("unarchive = %v", body)
		}
		if _, st := e.dial("team.example"); st != http.StatusSwitchingProtocols {
			t.Fatalf("dial unarchived community: %d", st)
		}
		st, body = e.api(e.op, "POST", "/operator/communities/unarchive", map[string]any{"host": "team.example", "owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "")
		if body["status"] != "already_active" {
			t.Fatalf("unarchive again = %v", body)
		}

		// The boot community cannot be archived; unknown hosts are 404.
		st, body = e.api(e.op, "POST", "/operator/communities/archive", map[string]any{"host": bootHost, "owner_pubkey": ""})
		expect(t, st, body, http.StatusConflict, operator.CodeProtected)
		st, body = e.api(e.op, "POST", "/operator/communities/archive", map[string]any{"host": "nope.example", "owner_pubkey": alice})
		expect(t, st, body, http.StatusNotFound, operator.CodeCommunityNotFound)
		if _, st := e.dial(bootHost); st != http.StatusSwitchingProtocols {
			t.Fatalf("boot community unreachable: %d", st)
		}

		// Transfer with a wrong, then the right expected owner, then again.
		tr := map[string]any{"community_id": teamID, "new_owner_pubkey": bob, "expected_owner_pubkey": bob}
		st, body = e.api(e.op, "POST", "/operator/communities/transfer", tr)
		expect(t, st, body, http.StatusConflict, operator.CodeOwnerConflict)
		tr["expected_owner_pubkey"] = alice
		st, body = e.api(e.op, "POST", "/operator/communities/transfer", tr)
		expect(t, st, body, http.StatusOK, "")
		if body["status"] != "transferred" || body["previous_owner"] != alice || body["new_owner_pubkey"] != bob || body["community_id"] != teamID {
			t.Fatalf("transfer = %v", body)
		}
		st, body = e.api(e.op, "POST", "/operator/communities/transfer", tr)
		expect(t, st, body, http.StatusOK, "")
		if body["status"] != "already_owner" || body["previous_owner"] != bob {
			t.Fatalf("transfer again = %v", body)
		}
		st, body = e.api(e.op, "POST", "/operator/communities/transfer", map[string]any{"community_id": tenant.NewCommunityID().String(), "new_owner_pubkey": bob, "expected_owner_pubkey": alice})
		expect(t, st, body, http.StatusNotFound, operator.CodeCommunityNotFound)
		// The boot community has no owner: claimed with a null guard.
		st, body = e.api(e.op, "POST", "/operator/communities/transfer", map[string]any{"community_id": e.bootID.String(), "new_owner_pubkey": bob, "expected_owner_pubkey": nil})
		expect(t, st, body, http.StatusOK, "")
		if body["status"] != "transferred" || body["previous_owner"] != nil {
			t.Fatalf("claim boot community = %v", body)
		}
		st, body = e.api(e.op, "POST", "/operator/communities/archive", map[string]any{"host": bootHost, "owner_pubkey": bob})
		expect(t, st, body, http.StatusConflict, operator.CodeProtected)
	})
}

func TestOperatorAPIBadInput(t *testing.T) {
	e := newEnv(t, openSQLite(t))
	alice := key(t).PublicKey()
	cases := []struct {
		name, method, path string
		body               string
		status             int
		code               string
	}{
		{"unknown field", "POST", "/operator/communities", `{"host":"a.example","owner":"x"}`, 400, operator.CodeInvalidRequest},
		{"not JSON", "POST", "/operator/communities", `host=a.example`, 400, operator.CodeInvalidRequest},
		{"trailing data", "POST", "/operator/communities", `{"host":"a.example"} {}`, 400, operator.CodeInvalidRequest},
		{"empty body", "POST", "/operator/communities", ``, 400, operator.CodeInvalidRequest},
		{"host with scheme", "POST", "/operator/communities", `{"host":"https://a.example"}`, 400, operator.CodeInvalidHost},
		{"host with path", "POST", "/operator/communities", `{"host":"a.example/x"}`, 400, operator.CodeInvalidHost},
		{"host with userinfo", "POST", "/operator/communities", `{"host":"u@a.example"}`, 400, operator.CodeInvalidHost},
		{"host with space", "POST", "/operator/communities", `{"host":" a.example"}`, 400, operator.CodeInvalidHost},
		{"host underscore", "POST", "/operator/communities", `{"host":"a_b.example"}`, 400, operator.CodeInvalidHost},
		{"empty host", "POST", "/operator/communities", `{"host":""}`, 400, operator.CodeInvalidHost},
		{"bad owner", "POST", "/operator/communities", `{"host":"a.example","initial_owner_pubkey":"ABC"}`, 400, operator.CodeInvalidPubKey},
		{"list without owner", "GET", "/operator/communities", ``, 400, operator.CodeInvalidRequest},
		{"list bad owner", "GET", "/operator/communities?owner_pubkey=zz", ``, 400, operator.CodeInvalidPubKey},
		{"list unknown param", "GET", "/operator/communities?owner_pubkey=" + alice + "&x=1", ``, 400, operator.CodeInvalidRequest},
		{"availability no host", "GET", "/operator/communities/availability", ``, 400, operator.CodeInvalidRequest},
		{"availability bad host", "GET", "/operator/communities/availability?host=a%2Fb", ``, 400, operator.CodeInvalidHost},
		{"archive without owner", "POST", "/operator/communities/archive", `{"host":"a.example"}`, 400, operator.CodeInvalidRequest},
		{"transfer bad id", "POST", "/operator/communities/transfer", `{"community_id":"x","new_owner_pubkey":"` + alice + `","expected_owner_pubkey":null}`, 400, operator.CodeInvalidCommunity},
		{"transfer without guard", "POST", "/operator/communities/transfer", `{"community_id":"` + e.bootID.String() + `","new_owner_pubkey":"` + alice + `"}`, 400, operator.CodeInvalidRequest},
		{"transfer bad new owner", "POST", "/operator/communities/transfer", `{"community_id":"` + e.bootID.String() + `","new_owner_pubkey":"","expected_owner_pubkey":null}`, 400, operator.CodeInvalidPubKey},
		{"wrong method", "DELETE", "/operator/communities", ``, 405, operator.CodeMethodNotAllowed},
		{"GET archive", "GET", "/operator/communities/archive", ``, 405, operator.CodeMethodNotAllowed},
		{"POST availability", "POST", "/operator/communities/availability", `{}`, 405, operator.CodeMethodNotAllowed},
		{"unknown path", "GET", "/operator/nothing", ``, 404, operator.CodeNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.method == "POST" {
				body = []byte(tc.body)
			}
			auth := token{sk: e.op, url: apiOrigin + tc.path, method: tc.method, body: body}.header(t)
			st, b, hdr := e.call(apiHost, tc.method, tc.path, body, auth)
			expect(t, st, decodeObj(t, b), tc.status, tc.code)
			if hdr.Get("Content-Type") != "application/json" {
				t.Fatalf("Content-Type %q", hdr.Get("Content-Type"))
			}
			if st == 405 && hdr.Get("Allow") == "" {
				t.Fatal("405 without Allow")
			}
		})
	}
	// Nothing was created by any of them.
	if _, err := e.st.CommunityByHost(context.Background(), "a.example"); err == nil {
		t.Fatal("a refused request created a community")
	}

	t.Run("body too large", func(t *testing.T) {
		body := []byte(`{"host":"` + strings.Repeat("a", operator.MaxBodyBytes) + `"}`)
		auth := token{sk: e.op, url: apiOrigin + "/operator/communities", method: "POST", body: body}.header(t)
		st, b, _ := e.call(apiHost, "POST", "/operator/communities", body, auth)
		expect(t, st, decodeObj(t, b), http.StatusRequestEntityTooLarge, operator.CodeBodyTooLarge)
	})
}

func TestOperatorAPIAuth(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(t *testing.T) backend) {
		e := newEnv(t, open(t))
		listPath := "/operator/communities?owner_pubkey=" + e.op.PublicKey()
		createPath := "/operator/communities"
		body := []byte(`{"host":"auth.example"}`)
		relayHost := strings.TrimPrefix(e.srv.URL, "http://")

		type tc struct {
			name   string
			method string
			path   string
			body   []byte
			auth   string
			code   string
		}
		cases := []tc{
			{"missing", "GET", listPath, nil, "", operator.CodeAuthMissing},
			{"malformed", "GET", listPath, nil, "Nostr !!!notbase64", operator.CodeAuthInvalid},
			{"wrong scheme", "GET", listPath, nil, "Bearer abc", operator.CodeAuthInvalid},
			{"stale", "GET", listPath, nil, token{sk: e.op, url: apiOrigin + listPath, method: "GET", createdAt: time.Now().Add(-5 * time.Minute)}.header(t), operator.CodeAuthStale},
			{"future", "GET", listPath, nil, token{sk: e.op, url: apiOrigin + listPath, method: "GET", createdAt: time.Now().Add(5 * time.Minute)}.header(t), operator.CodeAuthStale},
			{"wrong url", "GET", listPath, nil, token{sk: e.op, url: "https://evil.example" + listPath, method: "GET"}.header(t), operator.CodeAuthWrongURL},
			{"wrong path", "GET", listPath, nil, token{sk: e.op, url: apiOrigin + "/operator/communities/availability?host=x.example", method: "GET"}.header(t), operator.CodeAuthWrongURL},
			{"wrong query", "GET", listPath, nil, token{sk: e.op, url: apiOrigin + "/operator/communities?owner_pubkey=" + e.stranger.PublicKey(), method: "GET"}.header(t), operator.CodeAuthWrongURL},
			{"relay host instead of origin", "GET", listPath, nil, token{sk: e.op, url: "http://" + relayHost + listPath, method: "GET"}.header(t), operator.CodeAuthWrongURL},
			{"community host instead of origin", "GET", listPath, nil, token{sk: e.op, url: "https://" + bootHost + listPath, method: "GET"}.header(t), operator.CodeAuthWrongURL},
			{"wrong method", "GET", listPath, nil, token{sk: e.op, url: apiOrigin + listPath, method: "POST"}.header(t), operator.CodeAuthWrongMethod},
			{"POST without payload", "POST", createPath, body, token{sk: e.op, url: apiOrigin + createPath, method: "POST", body: body, noPayload: true}.header(t), operator.CodeAuthPayload},
			{"POST payload of another body", "POST", createPath, body, token{sk: e.op, url: apiOrigin + createPath, method: "POST", body: []byte(`{"host":"other.example"}`)}.header(t), operator.CodeAuthPayload},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				st, b, _ := e.call(apiHost, c.method, c.path, c.body, c.auth)
				expect(t, st, decodeObj(t, b), http.StatusUnauthorized, c.code)
			})
		}

		t.Run("replayed", func(t *testing.T) {
			auth := token{sk: e.op, url: apiOrigin + createPath, method: "POST", body: body}.header(t)
			st, b, _ := e.call(apiHost, "POST", createPath, body, auth)
			expect(t, st, decodeObj(t, b), http.StatusCreated, "")
			st, b, _ = e.call(apiHost, "POST", createPath, body, auth)
			expect(t, st, decodeObj(t, b), http.StatusUnauthorized, operator.CodeAuthReplayed)
		})

		t.Run("not an operator", func(t *testing.T) {
			st, body := e.api(e.stranger, "GET", listPath, nil)
			expect(t, st, body, http.StatusForbidden, operator.CodeNotOperator)
			if body["message"] != "actor not authorized: not a relay operator" {
				t.Fatalf("message %q", body["message"])
			}
			st, body = e.api(e.stranger, "POST", createPath, map[string]any{"host": "stranger.example"})
			expect(t, st, body, http.StatusForbidden, operator.CodeNotOperator)
			if _, err := e.st.CommunityByHost(context.Background(), "stranger.example"); err == nil {
				t.Fatal("a non-operator created a community")
			}
		})

		t.Run("origin host without community", func(t *testing.T) {
			// ops.example is not mapped to any community, yet the API answers.
			if _, st := e.dial(apiHost); st != http.StatusNotFound {
				t.Fatalf("relay on the API host: %d; want 404", st)
			}
			st, body := e.api(e.op, "GET", listPath, nil)
			expect(t, st, body, http.StatusOK, "")
		})

		t.Run("community hosts fall through to the relay", func(t *testing.T) {
			auth := token{sk: e.op, url: apiOrigin + listPath, method: "GET"}.header(t)
			for _, host := range []string{bootHost, "unmapped.example", relayHost} {
				st, b, hdr := e.call(host, "GET", listPath, nil, auth)
				if st != http.StatusNotFound || strings.Contains(hdr.Get("Content-Type"), "json") {
					t.Fatalf("%s: %d %q %s; want the relay's plain 404", host, st, hdr.Get("Content-Type"), b)
				}
			}
			// The token was not consumed by those: it still works on the API host.
			st, b, _ := e.call(apiHost, "GET", listPath, nil, auth)
			expect(t, st, decodeObj(t, b), http.StatusOK, "")
		})
	})
}

func TestOperatorAPIDisabled(t *testing.T) {
	h, err := operator.New()
	if err != nil {
		t.Fatal(err)
	}
	if h.Enabled() {
		t.Fatal("enabled without operators")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "https://ops.example/operator/communities?owner_pubkey=x", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("disabled ServeHTTP: %d", rec.Code)
	}
	st := openSQLite(t)
	relay, err := buzz.New(buzz.WithStore(st), buzz.WithChannels(), buzz.WithDirectory(st), buzz.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Shutdown(context.Background())
	// Origin given but no operators: still disabled, Wrap is the relay.
	h, err = operator.New(operator.WithAPIOrigin(apiOrigin), operator.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Wrap(relay))
	defer srv.Close()
	op := key(t)
	path := "/operator/communities"
	body := []byte(`{"host":"a.example"}`)
	req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
	req.Host = apiHost
	req.Header.Set("Authorization", token{sk: op, url: apiOrigin + path, method: "POST", body: body}.header(t))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("disabled API answered %d", resp.StatusCode)
	}
	if _, err := st.CommunityByHost(context.Background(), "a.example"); err == nil {
		t.Fatal("disabled API created a community")
	}
}

func TestNewValidation(t *testing.T) {
	st := openSQLite(t)
	op := key(t).PublicKey()
	bad := []struct {
		name string
		opts []operator.Option
	}{
		{"invalid key", []operator.Option{operator.WithOperators(op, "nothex"), operator.WithAPIOrigin(apiOrigin), operator.WithStore(st)}},
		{"short key", []operator.Option{operator.WithOperators(op[:63]), operator.WithAPIOrigin(apiOrigin), operator.WithStore(st)}},
		{"no origin", []operator.Option{operator.WithOperators(op), operator.WithStore(st)}},
		{"no store", []operator.Option{operator.WithOperators(op), operator.WithAPIOrigin(apiOrigin)}},
		{"origin with path", []operator.Option{operator.WithAPIOrigin("https://ops.example/api")}},
		{"origin with query", []operator.Option{operator.WithAPIOrigin("https://ops.example?x")}},
		{"origin with userinfo", []operator.Option{operator.WithAPIOrigin("https://u@ops.example")}},
		{"origin ws scheme", []operator.Option{operator.WithAPIOrigin("wss://ops.example")}},
		{"origin without scheme", []operator.Option{operator.WithAPIOrigin("ops.example")}},
		{"origin fragment", []operator.Option{operator.WithAPIOrigin("https://ops.example#x")}},
		{"zero quota", []operator.Option{operator.WithMaxCommunitiesPerOwner(0)}},
		{"zero protected", []operator.Option{operator.WithProtectedCommunities(tenant.CommunityID{})}},
		{"nil option", []operator.Option{nil}},
	}
	for _, b := range bad {
		if _, err := operator.New(b.opts...); err == nil {
			t.Errorf("%s: New succeeded", b.name)
		}
	}
	h, err := operator.New(operator.WithOperators(strings.ToUpper(op)), operator.WithAPIOrigin("HTTPS://Ops.Example:443/"), operator.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	if !h.Enabled() || h.Origin() != "https://ops.example" {
		t.Fatalf("enabled %v origin %q", h.Enabled(), h.Origin())
	}
}
