package buzz

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// nip98Header returns a NIP-98 Authorization value signed by s for method
// and url.
func nip98Header(t *testing.T, s *signer, method, url string) string {
	t.Helper()
	ev := s.event(27235, now(), "", nostr.Tag{"u", url}, nostr.Tag{"method", method})
	return "Nostr " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil))
}

type auditPage struct {
	Entries []struct {
		Seq      int64           `json:"seq"`
		PrevHash string          `json:"prev_hash"`
		Hash     string          `json:"hash"`
		Action   string          `json:"action"`
		Actor    string          `json:"actor"`
		Object   string          `json:"object"`
		Detail   json.RawMessage `json:"detail"`
	} `json:"entries"`
	NextAfter int64  `json:"next_after"`
	Error     string `json:"error"`
	Message   string `json:"message"`
}

// TestAuditHTTP: a community's owner and admins read its chain over HTTP
// with NIP-98, paginated, on the community's host; members, strangers and
// admins of another community get the same 403; nothing of another
// community is reachable, and an unmapped host is the fixed 404.
func TestAuditHTTP(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		st := b.open(t)
		v, err := nip98.NewVerifier()
		if err != nil {
			t.Fatal(err)
		}
		p := startPod(t, st, "a.example", WithHTTPAPI(v))
		if _, _, err := st.EnsureCommunity(ctx, "b.example"); err != nil {
			t.Fatal(err)
		}
		tb, err := tenant.Bind(ctx, st, "b.example")
		if err != nil {
			t.Fatal(err)
		}
		cs := st.(storetest.ChannelBackend)
		log := st.(store.AuditLog)
		adminA, adminB, member, stranger := newSigner(t), newSigner(t), newSigner(t), newSigner(t)
		for _, m := range []struct {
			c    tenant.CommunityID
			s    *signer
			role channel.Role
		}{{p.tc.Community(), adminA, channel.RoleAdmin}, {p.tc.Community(), member, channel.RoleMember}, {tb.Community(), adminB, channel.RoleAdmin}} {
			if err := cs.PutCommunityMember(ctx, m.c, m.s.pub(), m.role); err != nil {
				t.Fatal(err)
			}
		}
		// A change in each community, made over the relay in A.
		c := p.dial(t)
		ch := storetest.NewChannelID()
		c.mustAccept(adminA.event(nostr.KindCreateChannel, now(), "", nostr.Tag{"h", ch.String()}, nostr.Tag{"name", "general"}))
		if err := log.AppendAudit(ctx, tb.Community(), audit.Record{Action: "secret_of_b", Object: "b-only"}); err != nil {
			t.Fatal(err)
		}

		get := func(s *signer, host, query, signedHost string) (int, auditPage) {
			t.Helper()
			req, err := http.NewRequest("GET", p.srv.URL+AuditPath+query, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = host
			if s != nil {
				req.Header.Set("Authorization", nip98Header(t, s, "GET", "http://"+signedHost+AuditPath+query))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var pg auditPage
			if resp.StatusCode != http.StatusNotFound {
				if err := json.Unmarshal(body, &pg); err != nil {
					t.Fatalf("status %d, body %q", resp.StatusCode, body)
				}
			}
			return resp.StatusCode, pg
		}

		// A's admin reads A's chain: the two member puts and the channel.
		st1, pg := get(adminA, "a.example", "", "a.example")
		if st1 != http.StatusOK {
			t.Fatalf("admin of A: %d %s", st1, pg.Message)
		}
		want := []string{string(audit.CommunityMemberPut), string(audit.CommunityMemberPut), string(audit.ChannelCreated)}
		if len(pg.Entries) != len(want) {
			t.Fatalf("entries %+v", pg.Entries)
		}
		var v1 audit.Verifier
		es, _ := log.AuditEntries(ctx, p.tc.Community(), 0, 10)
		for i, e := range pg.Entries {
			if e.Action != want[i] || e.Seq != int64(i+1) || e.Object == "b-only" {
				t.Errorf("entry %d: %+v", i, e)
			}
			// What the route returns is what verifies.
			if e.Hash != hex.EncodeToString(es[i].Hash[:]) || string(e.Detail) != string(es[i].Detail) || !v1.Add(es[i]) {
				t.Errorf("entry %d differs from the stored chain", i)
			}
		}
		if pg.Entries[2].Actor != adminA.pub() || pg.Entries[2].Object != ch.String() {
			t.Errorf("channel entry %+v", pg.Entries[2])
		}

		// Paging.
		if st1, pg = get(adminA, "a.example", "?limit=2", "a.example"); st1 != http.StatusOK || len(pg.Entries) != 2 || pg.NextAfter != 2 {
			t.Fatalf("limit=2: %d %+v", st1, pg)
		}
		if st1, pg = get(adminA, "a.example", "?after=2&limit=2", "a.example"); st1 != http.StatusOK || len(pg.Entries) != 1 || pg.Entries[0].Seq != 3 || pg.NextAfter != 0 {
			t.Fatalf("after=2: %d %+v", st1, pg)
		}
		for _, q := range []string{"?limit=0", "?limit=1001", "?after=-1", "?after=x"} {
			if st1, pg = get(adminA, "a.example", q, "a.example"); st1 != http.StatusBadRequest {
				t.Errorf("%s: %d %+v", q, st1, pg)
			}
		}

		// Refusals: no header, a member, a stranger, B's admin on A.
		if st1, pg = get(nil, "a.example", "", "a.example"); st1 != http.StatusUnauthorized {
			t.Errorf("no auth: %d", st1)
		}
		var forbidden []auditPage
		for _, s := range []*signer{member, stranger, adminB} {
			st1, pg = get(s, "a.example", "", "a.example")
			if st1 != http.StatusForbidden || len(pg.Entries) != 0 {
				t.Errorf("%d %+v", st1, pg)
			}
			forbidden = append(forbidden, pg)
		}
		if forbidden[2].Error != forbidden[1].Error || forbidden[2].Message != forbidden[1].Message {
			t.Errorf("another community's admin is told %+v, a stranger %+v", forbidden[2], forbidden[1])
		}
		// A's admin on B's host: B's chain is not theirs, and the answer is a stranger's.
		st1, pg = get(adminA, "b.example", "", "b.example")
		if st1 != http.StatusForbidden || pg.Message != forbidden[1].Message {
			t.Errorf("admin of A on B: %d %+v", st1, pg)
		}
		// A header signed for A's URL is refused on B's host.
		if st1, _ = get(adminA, "b.example", "", "a.example"); st1 != http.StatusUnauthorized {
			t.Errorf("A's URL on B: %d", st1)
		}
		// B's admin reads B's chain only.
		if st1, pg = get(adminB, "b.example", "", "b.example"); st1 != http.StatusOK || len(pg.Entries) != 2 || pg.Entries[1].Object != "b-only" {
			t.Errorf("admin of B: %d %+v", st1, pg)
		}
		// A community's owner reads its chain too.
		ob, ok := st.(interface {
			CreateCommunity(context.Context, store.NewCommunity) (store.Community, bool, error)
		})
		if !ok {
			t.Fatal("backend has no operator registry")
		}
		owner := newSigner(t)
		if _, _, err := ob.CreateCommunity(ctx, store.NewCommunity{Host: "owned.example", OwnerPubKey: owner.pub()}); err != nil {
			t.Fatal(err)
		}
		if st1, pg = get(owner, "owned.example", "", "owned.example"); st1 != http.StatusOK || len(pg.Entries) != 1 || pg.Entries[0].Action != string(audit.CommunityProvisioned) {
			t.Errorf("owner: %d %+v", st1, pg)
		}
		if st1, _ = get(owner, "a.example", "", "a.example"); st1 != http.StatusForbidden {
			t.Errorf("owner of another community on A: %d", st1)
		}
		// Unmapped host.
		if st1, _ = get(adminA, "nobody.example", "", "nobody.example"); st1 != http.StatusNotFound {
			t.Errorf("unmapped host: %d", st1)
		}
	})
}
