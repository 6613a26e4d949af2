package buzz

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// get fetches path on the pod with Host host.
func (p *pod) get(t testing.TB, host, path string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// deleteName sends DELETE /names/{name} signed by s.
func (p *pod) deleteName(t testing.TB, s *signer, host, name string) int {
	t.Helper()
	path := NamesPath + "/" + name
	ev := s.event(nostr.KindHTTPAuth, now(), "", nostr.Tag{"u", "http://" + host + path}, nostr.Tag{"method", "DELETE"}, nostr.Tag{"nonce", randomHex(8)})
	req, err := http.NewRequest(http.MethodDelete, p.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Authorization", nip98.Scheme+" "+base64.StdEncoding.EncodeToString(ev.AppendJSON(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

type nip05Doc struct {
	Names  map[string]string   `json:"names"`
	Relays map[string][]string `json:"relays"`
}

func (p *pod) nip05(t testing.TB, host, name string) nip05Doc {
	t.Helper()
	code, h, b := p.get(t, host, NIP05Path+"?name="+name)
	eq(t, "nostr.json status", code, http.StatusOK)
	eq(t, "nostr.json CORS", h.Get("Access-Control-Allow-Origin"), "*")
	var d nip05Doc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("nostr.json %s: %v", b, err)
	}
	return d
}

func TestNIP05(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		const hostA, hostB = "a.example", "b.example"
		st := b.open(t)
		p := startAPIPod(t, st, hostA)
		ctx := context.Background()
		if _, _, err := st.EnsureCommunity(ctx, hostB); err != nil {
			t.Fatal(err)
		}
		alice, bob, admin, carol := newSigner(t), newSigner(t), newSigner(t), newSigner(t)
		claim := func(s *signer, host string, body any) int {
			code, _ := p.apiJSON(t, s, host, NamesPath, body)
			return code
		}

		eq(t, "alice claims", claim(alice, hostA, map[string]string{"name": "Alice"}), http.StatusOK)
		d := p.nip05(t, hostA, "alice")
		eq(t, "A resolves alice", d.Names["alice"], alice.pub())
		eq(t, "A relays", len(d.Relays[alice.pub()]) == 1 && d.Relays[alice.pub()][0] == "ws://"+hostA, true)
		eq(t, "case-insensitive lookup", p.nip05(t, hostA, "ALICE").Names["ALICE"], alice.pub())
		eq(t, "B knows no alice", len(p.nip05(t, hostB, "alice").Names), 0)
		eq(t, "unknown name", len(p.nip05(t, hostA, "nobody").Names), 0)
		eq(t, "no name", len(p.nip05(t, hostA, "").Names), 0)

		// A held name is refused; the same name in B is B's own.
		eq(t, "bob claims ALICE in A", claim(bob, hostA, map[string]string{"name": "ALICE"}), http.StatusConflict)
		eq(t, "bob claims alice in B", claim(bob, hostB, map[string]string{"name": "alice"}), http.StatusOK)
		eq(t, "A still alice's", p.nip05(t, hostA, "alice").Names["alice"], alice.pub())
		eq(t, "B is bob's", p.nip05(t, hostB, "alice").Names["alice"], bob.pub())
		eq(t, "bad name", claim(bob, hostA, map[string]string{"name": "not a name"}), http.StatusBadRequest)

		// Only the holder, owners and admins release; others give names
		// only as owner or admin.
		eq(t, "bob releases alice's", p.deleteName(t, bob, hostA, "alice"), http.StatusForbidden)
		eq(t, "bob gives a name", claim(bob, hostA, map[string]string{"name": "carol", "pubkey": carol.pub()}), http.StatusForbidden)
		cs := st.(store.ChannelStore)
		if err := cs.PutCommunityMember(ctx, p.tc.Community(), admin.pub(), channel.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		eq(t, "admin reserves support for carol", claim(admin, hostA, map[string]string{"name": "support", "pubkey": carol.pub()}), http.StatusOK)
		eq(t, "support is carol's", p.nip05(t, hostA, "support").Names["support"], carol.pub())
		eq(t, "admin releases alice's", p.deleteName(t, admin, hostA, "alice"), http.StatusOK)
		eq(t, "alice released", len(p.nip05(t, hostA, "alice").Names), 0)
		eq(t, "carol releases her own", p.deleteName(t, carol, hostA, "support"), http.StatusOK)
		eq(t, "release of a free name", p.deleteName(t, carol, hostA, "support"), http.StatusNotFound)
		// A's admin is nobody in B.
		eq(t, "A's admin in B", p.deleteName(t, admin, hostB, "alice"), http.StatusForbidden)

		// Members-only community: only members claim.
		idC, _, err := st.EnsureCommunity(ctx, "c.example")
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SetCommunityAccess(ctx, idC, channel.AccessMembers); err != nil {
			t.Fatal(err)
		}
		eq(t, "stranger in members-only C", claim(carol, "c.example", map[string]string{"name": "carol"}), http.StatusForbidden)
		if err := cs.PutCommunityMember(ctx, idC, carol.pub(), channel.RoleMember); err != nil {
			t.Fatal(err)
		}
		eq(t, "member of C", claim(carol, "c.example", map[string]string{"name": "carol"}), http.StatusOK)

		// Profiles claim: a kind 0 whose nip05 is name@<this host>.
		dave, eve := newSigner(t), newSigner(t)
		profile := func(s *signer, nip05 string) *nostr.Event {
			return s.event(nostr.KindProfile, now(), `{"name":"x","nip05":"`+nip05+`"}`)
		}
		c := p.dial(t)
		c.mustAccept(profile(dave, "Dave@A.example"))
		eq(t, "profile claims dave", p.nip05(t, hostA, "dave").Names["dave"], dave.pub())
		ok := c.publish(profile(eve, "dave@a.example"))
		eq(t, "eve's profile naming dave", ok.OK, false)
		eq(t, "eve's profile message", ok.Message, "restricted: the nip05 name dave@a.example is held by another user")
		c.mustAccept(profile(eve, "eve@b.example")) // another host: no name here or there
		eq(t, "eve has no name in A", len(p.nip05(t, hostA, "eve").Names), 0)
		eq(t, "eve has no name in B", len(p.nip05(t, hostB, "eve").Names), 0)
		c.mustAccept(dave.event(nostr.KindProfile, now()+1, `{"nip05":"david@a.example"}`))
		eq(t, "dave moved to david", p.nip05(t, hostA, "david").Names["david"], dave.pub())
		eq(t, "dave is free", len(p.nip05(t, hostA, "dave").Names), 0)

		code, _, body := p.get(t, "nowhere.example", NIP05Path+"?name=alice")
		eq(t, "unmapped host", code, http.StatusNotFound)
		eq(t, "unmapped body", string(body), tenant.ErrUnmappedHost.Error()+"\n")
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
