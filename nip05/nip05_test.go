package nip05_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nip05"
	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// relay is a relay with the NIP-05 feature.
type relay struct{ *relaytest.Relay }

func serve(t *testing.T, st store.Backend, opts ...buzz.Option) relay {
	return relay{relaytest.Serve(t, st, append([]buzz.Option{buzz.WithFeature(nip05.New())}, opts...)...)}
}

type user = relaytest.User

func newUser() user { return relaytest.NewUser() }

func (r relay) claim(u user, host string, in map[string]string) int {
	r.T.Helper()
	b, _ := json.Marshal(in)
	code, _, _ := r.Do(&u, http.MethodPost, host, "", nip05.NamesPath, b)
	return code
}

func (r relay) release(u user, host, name string) int {
	r.T.Helper()
	code, _, _ := r.Do(&u, http.MethodDelete, host, "", nip05.NamesPath+"/"+name, nil)
	return code
}

type doc struct {
	Names  map[string]string   `json:"names"`
	Relays map[string][]string `json:"relays"`
}

func (r relay) lookup(host, name string) doc {
	r.T.Helper()
	code, h, b := r.Do(nil, http.MethodGet, host, "", nip05.Path+"?name="+name, nil)
	if code != http.StatusOK || h.Get("Access-Control-Allow-Origin") != "*" {
		r.T.Fatalf("nostr.json on %s: %d, CORS %q", host, code, h.Get("Access-Control-Allow-Origin"))
	}
	var d doc
	if err := json.Unmarshal(b, &d); err != nil {
		r.T.Fatalf("nostr.json %s: %v", b, err)
	}
	return d
}

// publish sends a kind 0 by u over a go-nostr connection; it returns ""
// when accepted, else the relay's message.
func (r relay) publish(u user, content string, at gonostr.Timestamp) string {
	r.T.Helper()
	return r.Publish(u, gonostr.Event{Kind: 0, CreatedAt: at, Content: content})
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	relaytest.Eq(t, what, got, want)
}

func TestNIP05(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		ctx := context.Background()
		r := serve(t, st)
		hostA, hostB := r.Host, "b.example"
		if _, _, err := st.EnsureCommunity(ctx, hostB); err != nil {
			t.Fatal(err)
		}
		alice, bob, admin, carol := newUser(), newUser(), newUser(), newUser()

		relaytest.Eq(t, "NIP-11 lists NIP-05", slices.ContainsFunc(r.Relay.Relay.NIPs(), func(n nip11.NIP) bool { return n.Number == 5 }), true)
		eq(t, "alice claims", r.claim(alice, hostA, map[string]string{"name": "Alice"}), http.StatusOK)
		d := r.lookup(hostA, "alice")
		eq(t, "A resolves alice", d.Names["alice"], alice.PK)
		relaytest.Eq(t, "A relays", len(d.Relays[alice.PK]) == 1 && d.Relays[alice.PK][0] == "ws://"+hostA, true)
		eq(t, "case-insensitive lookup", r.lookup(hostA, "ALICE").Names["ALICE"], alice.PK)
		eq(t, "B knows no alice", len(r.lookup(hostB, "alice").Names), 0)
		eq(t, "unknown name", len(r.lookup(hostA, "nobody").Names), 0)
		eq(t, "no name", len(r.lookup(hostA, "").Names), 0)

		// A held name is refused; the same name in B is B's own.
		eq(t, "bob claims ALICE in A", r.claim(bob, hostA, map[string]string{"name": "ALICE"}), http.StatusConflict)
		eq(t, "bob claims alice in B", r.claim(bob, hostB, map[string]string{"name": "alice"}), http.StatusOK)
		eq(t, "A still alice's", r.lookup(hostA, "alice").Names["alice"], alice.PK)
		eq(t, "B is bob's", r.lookup(hostB, "alice").Names["alice"], bob.PK)
		eq(t, "bad name", r.claim(bob, hostA, map[string]string{"name": "not a name"}), http.StatusBadRequest)
		code, _, _ := r.Do(nil, http.MethodPost, hostA, "", nip05.NamesPath, []byte(`{"name":"x"}`))
		eq(t, "unsigned claim", code, http.StatusUnauthorized)

		// Only the holder, owners and admins release; others give names
		// only as owner or admin.
		eq(t, "bob releases alice's", r.release(bob, hostA, "alice"), http.StatusForbidden)
		eq(t, "bob gives a name", r.claim(bob, hostA, map[string]string{"name": "carol", "pubkey": carol.PK}), http.StatusForbidden)
		idA, err := st.LookupHost(ctx, hostA)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutCommunityMember(ctx, idA, admin.PK, channel.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		eq(t, "admin reserves support for carol", r.claim(admin, hostA, map[string]string{"name": "support", "pubkey": carol.PK}), http.StatusOK)
		eq(t, "support is carol's", r.lookup(hostA, "support").Names["support"], carol.PK)
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
		if err := st.PutCommunityMember(ctx, idC, carol.PK, channel.RoleMember); err != nil {
			t.Fatal(err)
		}
		eq(t, "member of C", r.claim(carol, "c.example", map[string]string{"name": "carol"}), http.StatusOK)

		// Profiles claim: a kind 0 whose nip05 is name@<this host>.
		dave, eve := newUser(), newUser()
		profile := func(nip05 string) string { return `{"name":"x","nip05":"` + nip05 + `"}` }
		eq(t, "dave's profile", r.publish(dave, profile("Dave@"+strings.ToUpper(hostA)), gonostr.Now()), "")
		eq(t, "profile claims dave", r.lookup(hostA, "dave").Names["dave"], dave.PK)
		eq(t, "eve's profile naming dave", r.publish(eve, profile("dave@"+hostA), gonostr.Now()),
			"restricted: the nip05 name dave@"+hostA+" is held by another user")
		eq(t, "eve's profile of another host", r.publish(eve, profile("eve@b.example"), gonostr.Now()), "")
		eq(t, "eve has no name in A", len(r.lookup(hostA, "eve").Names), 0)
		eq(t, "eve has no name in B", len(r.lookup(hostB, "eve").Names), 0)
		eq(t, "dave renames", r.publish(dave, `{"nip05":"david@`+hostA+`"}`, gonostr.Now()+1), "")
		eq(t, "dave moved to david", r.lookup(hostA, "david").Names["david"], dave.PK)
		eq(t, "dave is free", len(r.lookup(hostA, "dave").Names), 0)

		code, _, body := r.Do(nil, http.MethodGet, "nowhere.example", "", nip05.Path+"?name=alice", nil)
		eq(t, "unmapped host", code, http.StatusNotFound)
		eq(t, "unmapped body", string(body), tenant.ErrUnmappedHost.Error()+"\n")
	})
}

// TestWithoutHTTPAuth: without WithHTTPAuth names resolve and profiles
// claim, but no claim route is mounted.
func TestWithoutHTTPAuth(t *testing.T) {
	st := relaytest.Embedded(t)
	r := relay{relaytest.ServeWith(t, st, buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithFeature(nip05.New()), buzz.WithLogger(relaytest.Quiet()))}
	u := newUser()
	eq(t, "profile", r.publish(u, `{"nip05":"u@`+r.Host+`"}`, gonostr.Now()), "")
	eq(t, "resolves", r.lookup(r.Host, "u").Names["u"], u.PK)
	code, _, _ := r.Do(&u, http.MethodPost, r.Host, "", nip05.NamesPath, []byte(`{"name":"v"}`))
	if code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /names without the HTTP API: %d", code)
	}
}

// TestMountNeedsNames: a store that keeps no names fails New.
func TestMountNeedsNames(t *testing.T) {
	st := relaytest.Embedded(t)
	_, err := buzz.New(buzz.WithStore(eventsOnly{st}), buzz.WithDirectory(st), buzz.WithFeature(nip05.New()))
	if err == nil || !strings.HasPrefix(err.Error(), "nip05: ") {
		t.Fatalf("New = %v, want a nip05: error", err)
	}
}

type eventsOnly struct{ store.EventStore }
