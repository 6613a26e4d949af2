package nip05_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nip05"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/sqlite"
	"github.com/buzzrelay/buzz/tenant"
)

// backend is a store a relay with the feature runs on.
type backend interface {
	store.Backend
	store.ChannelStore
}

func forBackends(t *testing.T, fn func(t *testing.T, st backend)) {
	quiet := slog.New(slog.DiscardHandler)
	t.Run("embedded", func(t *testing.T) {
		st, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.WithLSMEvents(), sqlite.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		fn(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t), postgres.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		fn(t, st)
	})
}

// relay is a relay with the NIP-05 feature over a real HTTP server; host
// is the server's own host, mapped to a community.
type relay struct {
	t    *testing.T
	srv  *httptest.Server
	host string
	rel  *buzz.Relay
}

func serve(t *testing.T, st backend, opts ...buzz.Option) *relay {
	t.Helper()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := buzz.New(append([]buzz.Option{buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithChannels(),
		buzz.WithHTTPAPI(v), buzz.WithFeature(nip05.New()), buzz.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rel.Shutdown(ctx)
	})
	h = rel
	return &relay{t: t, srv: srv, host: host, rel: rel}
}

// user is one key.
type user struct{ sk, pk string }

func newUser() user {
	sk := gonostr.GeneratePrivateKey()
	pk, _ := gonostr.GetPublicKey(sk)
	return user{sk, pk}
}

func nonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// do sends method path with Host host, signed by u with NIP-98 when u is
// not nil, and returns the status and body.
func (r *relay) do(u *user, method, host, path string, body []byte) (int, http.Header, []byte) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Host = host
	if u != nil {
		tags := gonostr.Tags{{"u", "http://" + host + path}, {"method", method}, {"nonce", nonce()}}
		if len(body) > 0 {
			sum := sha256.Sum256(body)
			tags = append(tags, gonostr.Tag{"payload", hex.EncodeToString(sum[:])})
		}
		ev := gonostr.Event{Kind: 27235, CreatedAt: gonostr.Now(), Tags: tags}
		if err := ev.Sign(u.sk); err != nil {
			r.t.Fatal(err)
		}
		req.Header.Set("Authorization", "Nostr "+base64.StdEncoding.EncodeToString([]byte(ev.String())))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func (r *relay) claim(u user, host string, in map[string]string) int {
	r.t.Helper()
	b, _ := json.Marshal(in)
	code, _, _ := r.do(&u, http.MethodPost, host, nip05.NamesPath, b)
	return code
}

func (r *relay) release(u user, host, name string) int {
	r.t.Helper()
	code, _, _ := r.do(&u, http.MethodDelete, host, nip05.NamesPath+"/"+name, nil)
	return code
}

type doc struct {
	Names  map[string]string   `json:"names"`
	Relays map[string][]string `json:"relays"`
}

func (r *relay) lookup(host, name string) doc {
	r.t.Helper()
	code, h, b := r.do(nil, http.MethodGet, host, nip05.Path+"?name="+name, nil)
	if code != http.StatusOK || h.Get("Access-Control-Allow-Origin") != "*" {
		r.t.Fatalf("nostr.json on %s: %d, CORS %q", host, code, h.Get("Access-Control-Allow-Origin"))
	}
	var d doc
	if err := json.Unmarshal(b, &d); err != nil {
		r.t.Fatalf("nostr.json %s: %v", b, err)
	}
	return d
}

// publish sends a kind 0 by u over a go-nostr connection to the relay's
// host; it returns "" when accepted, else the relay's message.
func (r *relay) publish(u user, content string, at gonostr.Timestamp) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rl, err := gonostr.RelayConnect(ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http"))
	if err != nil {
		r.t.Fatal(err)
	}
	defer rl.Close()
	ev := gonostr.Event{Kind: 0, CreatedAt: at, Content: content}
	if err := ev.Sign(u.sk); err != nil {
		r.t.Fatal(err)
	}
	if err := rl.Publish(ctx, ev); err != nil {
		return strings.TrimPrefix(err.Error(), "msg: ")
	}
	return ""
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func TestNIP05(t *testing.T) {
	forBackends(t, func(t *testing.T, st backend) {
		ctx := context.Background()
		r := serve(t, st)
		hostA, hostB := r.host, "b.example"
		if _, _, err := st.EnsureCommunity(ctx, hostB); err != nil {
			t.Fatal(err)
		}
		alice, bob, admin, carol := newUser(), newUser(), newUser(), newUser()

		eq(t, "NIP-11 lists NIP-05", slices.ContainsFunc(r.rel.NIPs(), func(n buzz.NIP) bool { return n.Number == 5 }), true)
		eq(t, "alice claims", r.claim(alice, hostA, map[string]string{"name": "Alice"}), http.StatusOK)
		d := r.lookup(hostA, "alice")
		eq(t, "A resolves alice", d.Names["alice"], alice.pk)
		eq(t, "A relays", len(d.Relays[alice.pk]) == 1 && d.Relays[alice.pk][0] == "ws://"+hostA, true)
		eq(t, "case-insensitive lookup", r.lookup(hostA, "ALICE").Names["ALICE"], alice.pk)
		eq(t, "B knows no alice", len(r.lookup(hostB, "alice").Names), 0)
		eq(t, "unknown name", len(r.lookup(hostA, "nobody").Names), 0)
		eq(t, "no name", len(r.lookup(hostA, "").Names), 0)

		// A held name is refused; the same name in B is B's own.
		eq(t, "bob claims ALICE in A", r.claim(bob, hostA, map[string]string{"name": "ALICE"}), http.StatusConflict)
		eq(t, "bob claims alice in B", r.claim(bob, hostB, map[string]string{"name": "alice"}), http.StatusOK)
		eq(t, "A still alice's", r.lookup(hostA, "alice").Names["alice"], alice.pk)
		eq(t, "B is bob's", r.lookup(hostB, "alice").Names["alice"], bob.pk)
		eq(t, "bad name", r.claim(bob, hostA, map[string]string{"name": "not a name"}), http.StatusBadRequest)
		code, _, _ := r.do(nil, http.MethodPost, hostA, nip05.NamesPath, []byte(`{"name":"x"}`))
		eq(t, "unsigned claim", code, http.StatusUnauthorized)

		// Only the holder, owners and admins release; others give names
		// only as owner or admin.
		eq(t, "bob releases alice's", r.release(bob, hostA, "alice"), http.StatusForbidden)
		eq(t, "bob gives a name", r.claim(bob, hostA, map[string]string{"name": "carol", "pubkey": carol.pk}), http.StatusForbidden)
		idA, err := st.LookupHost(ctx, hostA)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutCommunityMember(ctx, idA, admin.pk, channel.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		eq(t, "admin reserves support for carol", r.claim(admin, hostA, map[string]string{"name": "support", "pubkey": carol.pk}), http.StatusOK)
		eq(t, "support is carol's", r.lookup(hostA, "support").Names["support"], carol.pk)
		eq(t, "admin releases alice's", r.release(admin, hostA, "alice"), http.StatusOK)
		eq(t, "alice released", len(r.lookup(hostA, "alice").Names), 0)
		eq(t, "carol releases her own", r.release(carol, hostA, "support"), http.StatusOK)
		eq(t, "release of a free name", r.release(carol, hostA, "support"), http.StatusNotFound)
		// A's admin is nobody in B.
		eq(t, "A's admin in B", r.release(admin, hostB, "alice"), http.StatusForbidden)

		// Members-only community: only members claim.
		idC, _, err := st.EnsureCommunity(ctx, "c.example")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SetCommunityAccess(ctx, idC, channel.AccessMembers); err != nil {
			t.Fatal(err)
		}
		eq(t, "stranger in members-only C", r.claim(carol, "c.example", map[string]string{"name": "carol"}), http.StatusForbidden)
		if err := st.PutCommunityMember(ctx, idC, carol.pk, channel.RoleMember); err != nil {
			t.Fatal(err)
		}
		eq(t, "member of C", r.claim(carol, "c.example", map[string]string{"name": "carol"}), http.StatusOK)

		// Profiles claim: a kind 0 whose nip05 is name@<this host>.
		dave, eve := newUser(), newUser()
		profile := func(nip05 string) string { return `{"name":"x","nip05":"` + nip05 + `"}` }
		eq(t, "dave's profile", r.publish(dave, profile("Dave@"+strings.ToUpper(hostA)), gonostr.Now()), "")
		eq(t, "profile claims dave", r.lookup(hostA, "dave").Names["dave"], dave.pk)
		eq(t, "eve's profile naming dave", r.publish(eve, profile("dave@"+hostA), gonostr.Now()),
			"restricted: the nip05 name dave@"+hostA+" is held by another user")
		eq(t, "eve's profile of another host", r.publish(eve, profile("eve@b.example"), gonostr.Now()), "")
		eq(t, "eve has no name in A", len(r.lookup(hostA, "eve").Names), 0)
		eq(t, "eve has no name in B", len(r.lookup(hostB, "eve").Names), 0)
		eq(t, "dave renames", r.publish(dave, `{"nip05":"david@`+hostA+`"}`, gonostr.Now()+1), "")
		eq(t, "dave moved to david", r.lookup(hostA, "david").Names["david"], dave.pk)
		eq(t, "dave is free", len(r.lookup(hostA, "dave").Names), 0)

		code, _, body := r.do(nil, http.MethodGet, "nowhere.example", nip05.Path+"?name=alice", nil)
		eq(t, "unmapped host", code, http.StatusNotFound)
		eq(t, "unmapped body", string(body), tenant.ErrUnmappedHost.Error()+"\n")
	})
}

// TestWithoutHTTPAuth: without WithHTTPAPI names resolve and profiles
// claim, but no claim route is mounted.
func TestWithoutHTTPAuth(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.WithLSMEvents())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	host, _ := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if _, _, err := st.EnsureCommunity(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	rel, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithFeature(nip05.New()), buzz.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rel.Shutdown(context.Background()) })
	h = rel
	r := &relay{t: t, srv: srv, host: host, rel: rel}
	u := newUser()
	eq(t, "profile", r.publish(u, `{"nip05":"u@`+host+`"}`, gonostr.Now()), "")
	eq(t, "resolves", r.lookup(host, "u").Names["u"], u.pk)
	code, _, _ := r.do(&u, http.MethodPost, host, nip05.NamesPath, []byte(`{"name":"v"}`))
	if code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /names without the HTTP API: %d", code)
	}
}

// TestMountNeedsNames: a store that keeps no names fails New.
func TestMountNeedsNames(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.WithLSMEvents())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	_, err = buzz.New(buzz.WithStore(eventsOnly{st}), buzz.WithDirectory(st), buzz.WithFeature(nip05.New()))
	if err == nil || !strings.HasPrefix(err.Error(), "nip05: ") {
		t.Fatalf("New = %v, want a nip05: error", err)
	}
}

type eventsOnly struct{ store.EventStore }
