package admin_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/admin"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

type backend interface {
	store.Backend
	store.ModerationStore
	store.FeedbackStore
}

const adminHost = "admin.example"

func forEachBackend(t *testing.T, fn func(t *testing.T, st backend)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := embedded.Open(context.Background(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		fn(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		fn(t, st)
	})
}

func newKey(t *testing.T) nostr.SecretKey {
	t.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// serve runs a relay (communities a.example and b.example) behind h.
func serve(t *testing.T, st backend, h *admin.Handler) *httptest.Server {
	t.Helper()
	rel, err := buzz.New(buzz.WithStore(st), buzz.WithChannels(), buzz.WithDirectory(st))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Wrap(rel))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rel.Shutdown(ctx)
		srv.Close()
	})
	return srv
}

func token(t *testing.T, sk nostr.SecretKey, u, method string) string {
	t.Helper()
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	ev := &nostr.Event{Kind: nostr.KindHTTPAuth, CreatedAt: time.Now().Unix(),
		Tags: nostr.Tags{{"u", u}, {"method", method}, {"nonce", hex.EncodeToString(nonce)}}}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return nip98.Scheme + " " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil))
}

func do(t *testing.T, srv *httptest.Server, method, host, path string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminHost(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st backend) {
		ctx := context.Background()
		op, stranger := newKey(t), newKey(t)
		for i, host := range []string{"a.example", "b.example"} {
			c, _, err := st.EnsureCommunity(ctx, host)
			if err != nil {
				t.Fatal(err)
			}
			r := store.Report{ID: fmt.Sprintf("%064x", 100+i), Reporter: fmt.Sprintf("%064x", 1), TargetPubKey: fmt.Sprintf("%064x", 2),
				Type: "spam", CreatedAt: time.Now().Unix(), Raw: []byte(`{"kind":1984}`)}
			if err := st.AddReport(ctx, c, r); err != nil {
				t.Fatal(err)
			}
		}
		h, err := admin.New(admin.WithHost("Admin.Example:443"), admin.WithOperators(op.PublicKey()), admin.WithStore(st))
		if err != nil {
			t.Fatal(err)
		}
		srv := serve(t, st, h)
		url := "https://" + adminHost + admin.ReportsPath
		auth := func(sk nostr.SecretKey) map[string]string {
			return map[string]string{"Authorization": token(t, sk, url, "GET")}
		}

		status, body := do(t, srv, http.MethodGet, adminHost, admin.ReportsPath, auth(op))
		if status != http.StatusOK {
			t.Fatalf("reports: %d %s", status, body)
		}
		var got struct {
			Reports []admin.ReportJSON `json:"reports"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Reports) != 2 {
			t.Fatalf("reports = %s (%v)", body, err)
		}
		hosts := map[string]string{}
		for _, r := range got.Reports {
			hosts[r.ID] = r.Host
		}
		if hosts[fmt.Sprintf("%064x", 100)] != "a.example" || hosts[fmt.Sprintf("%064x", 101)] != "b.example" {
			t.Fatalf("hosts = %v", hosts)
		}
		withOrigin := func(o string) map[string]string { m := auth(op); m["Origin"] = o; return m }
		for _, tc := range []struct {
			name   string
			method string
			host   string
			path   string
			hdr    map[string]string
			want   int
		}{
			{"same Origin", http.MethodGet, adminHost, admin.ReportsPath, withOrigin("https://admin.example"), http.StatusOK},
			{"foreign Origin", http.MethodGet, adminHost, admin.ReportsPath, withOrigin("https://evil.example"), http.StatusForbidden},
			{"http Origin", http.MethodGet, adminHost, admin.ReportsPath, withOrigin("http://admin.example"), http.StatusForbidden},
			{"no token", http.MethodGet, adminHost, admin.ReportsPath, nil, http.StatusUnauthorized},
			{"not an operator", http.MethodGet, adminHost, admin.ReportsPath, auth(stranger), http.StatusForbidden},
			{"token for another URL", http.MethodGet, adminHost, admin.ReportsPath,
				map[string]string{"Authorization": token(t, op, "https://a.example"+admin.ReportsPath, "GET")}, http.StatusUnauthorized},
			{"bad limit", http.MethodGet, adminHost, admin.ReportsPath + "?limit=501", map[string]string{"Authorization": token(t, op, url+"?limit=501", "GET")}, http.StatusBadRequest},
			{"POST", http.MethodPost, adminHost, admin.ReportsPath, auth(op), http.StatusMethodNotAllowed},
			{"no NIP-11", http.MethodGet, adminHost, "/", map[string]string{"Accept": "application/nostr+json"}, http.StatusNotFound},
			{"no health probe", http.MethodGet, adminHost, buzz.HealthzPath, nil, http.StatusNotFound},
			{"no admin route on a community host", http.MethodGet, "a.example", admin.ReportsPath, auth(op), http.StatusNotFound},
		} {
			if status, body := do(t, srv, tc.method, tc.host, tc.path, tc.hdr); status != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.want)
			}
		}
		// No WebSocket upgrade on the admin host; the relay's hosts upgrade.
		wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")
		if _, resp, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Host": {adminHost}}); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("upgrade on the admin host: %v %v", err, resp)
		}
		ws, _, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Host": {"a.example"}})
		if err != nil {
			t.Fatalf("upgrade on a community host: %v", err)
		}
		ws.Close()
	})
}

func TestAdminHostUnset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st backend) {
		if _, _, err := st.EnsureCommunity(context.Background(), adminHost); err != nil {
			t.Fatal(err)
		}
		h, err := admin.New()
		if err != nil || h.Enabled() {
			t.Fatalf("New() = %v, enabled %v", err, h.Enabled())
		}
		srv := serve(t, st, h)
		for _, host := range []string{adminHost, "other.example"} {
			if status, _ := do(t, srv, http.MethodGet, host, admin.ReportsPath, nil); status != http.StatusNotFound {
				t.Fatalf("GET /reports on %s with no admin host: %d", host, status)
			}
		}
	})
}

func TestAdminNew(t *testing.T) {
	for _, opts := range [][]admin.Option{
		{admin.WithHost("https://admin.example")},
		{admin.WithHost("admin.example/x")},
		{admin.WithHost("admin.example")},                                               // no operators
		{admin.WithHost("admin.example"), admin.WithOperators(strings.Repeat("a", 64))}, // no store
		{admin.WithOperators("ABC")},
		{admin.WithScheme("ftp")},
	} {
		if _, err := admin.New(opts...); err == nil {
			t.Errorf("New(%d options) accepted", len(opts))
		}
	}
	if h, err := admin.NormalizeHost("Admin.Example.:443"); err != nil || h != "admin.example" {
		t.Fatalf("NormalizeHost = %q, %v", h, err)
	}
}
