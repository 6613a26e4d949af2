package audithttp_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/audit/audithttp"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

type page struct {
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
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		ctx := context.Background()
		r := relaytest.Serve(t, st, buzz.WithFeature(audithttp.New()))
		hostA, hostB := r.Host, "b.example"
		idA, err := st.LookupHost(ctx, hostA)
		if err != nil {
			t.Fatal(err)
		}
		idB, _, err := st.EnsureCommunity(ctx, hostB)
		if err != nil {
			t.Fatal(err)
		}
		adminA, adminB, member, stranger := relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser()
		for _, m := range []struct {
			c    tenant.CommunityID
			u    relaytest.User
			role channel.Role
		}{{idA, adminA, channel.RoleAdmin}, {idA, member, channel.RoleMember}, {idB, adminB, channel.RoleAdmin}} {
			if err := st.PutCommunityMember(ctx, m.c, m.u.PK, m.role); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.AppendAudit(ctx, idA, audit.Record{Action: "test_action", Actor: adminA.PK, Object: "a-only"}); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendAudit(ctx, idB, audit.Record{Action: "secret_of_b", Object: "b-only"}); err != nil {
			t.Fatal(err)
		}

		get := func(u *relaytest.User, host, query, signedHost string) (int, page) {
			t.Helper()
			code, _, body := r.Do(u, http.MethodGet, host, signedHost, audithttp.Path+query, nil)
			var pg page
			if code != http.StatusNotFound {
				if err := json.Unmarshal(body, &pg); err != nil {
					t.Fatalf("status %d, body %q", code, body)
				}
			}
			return code, pg
		}

		// A's admin reads A's chain: the two member puts and the record.
		code, pg := get(&adminA, hostA, "", "")
		if code != http.StatusOK {
			t.Fatalf("admin of A: %d %s", code, pg.Message)
		}
		want := []string{string(audit.CommunityMemberPut), string(audit.CommunityMemberPut), "test_action"}
		if len(pg.Entries) != len(want) {
			t.Fatalf("entries %+v", pg.Entries)
		}
		var v audit.Verifier
		es, err := st.AuditEntries(ctx, idA, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range pg.Entries {
			if e.Action != want[i] || e.Seq != int64(i+1) || e.Object == "b-only" {
				t.Errorf("entry %d: %+v", i, e)
			}
			// What the route returns is what verifies.
			if e.Hash != hex.EncodeToString(es[i].Hash[:]) || string(e.Detail) != string(es[i].Detail) || !v.Add(es[i]) {
				t.Errorf("entry %d differs from the stored chain", i)
			}
		}
		if pg.Entries[2].Actor != adminA.PK || pg.Entries[2].Object != "a-only" {
			t.Errorf("record entry %+v", pg.Entries[2])
		}

		// Paging.
		if code, pg = get(&adminA, hostA, "?limit=2", ""); code != http.StatusOK || len(pg.Entries) != 2 || pg.NextAfter != 2 {
			t.Fatalf("limit=2: %d %+v", code, pg)
		}
		if code, pg = get(&adminA, hostA, "?after=2&limit=2", ""); code != http.StatusOK || len(pg.Entries) != 1 || pg.Entries[0].Seq != 3 || pg.NextAfter != 0 {
			t.Fatalf("after=2: %d %+v", code, pg)
		}
		for _, q := range []string{"?limit=0", "?limit=1001", "?after=-1", "?after=x"} {
			if code, pg = get(&adminA, hostA, q, ""); code != http.StatusBadRequest || !strings.HasPrefix(pg.Message, "invalid: ") {
				t.Errorf("%s: %d %+v", q, code, pg)
			}
		}

		// Refusals: no header, a member, a stranger, B's admin on A.
		if code, _ = get(nil, hostA, "", ""); code != http.StatusUnauthorized {
			t.Errorf("no auth: %d", code)
		}
		var forbidden []page
		for _, u := range []relaytest.User{member, stranger, adminB} {
			code, pg = get(&u, hostA, "", "")
			if code != http.StatusForbidden || len(pg.Entries) != 0 {
				t.Errorf("%d %+v", code, pg)
			}
			forbidden = append(forbidden, pg)
		}
		if forbidden[2].Error != forbidden[1].Error || forbidden[2].Message != forbidden[1].Message {
			t.Errorf("another community's admin is told %+v, a stranger %+v", forbidden[2], forbidden[1])
		}
		// A's admin on B's host: B's chain is not theirs, and the answer is a stranger's.
		if code, pg = get(&adminA, hostB, "", ""); code != http.StatusForbidden || pg.Message != forbidden[1].Message {
			t.Errorf("admin of A on B: %d %+v", code, pg)
		}
		// A header signed for A's URL is refused on B's host.
		if code, _ = get(&adminA, hostB, "", hostA); code != http.StatusUnauthorized {
			t.Errorf("A's URL on B: %d", code)
		}
		// B's admin reads B's chain only.
		if code, pg = get(&adminB, hostB, "", ""); code != http.StatusOK || len(pg.Entries) != 2 || pg.Entries[1].Object != "b-only" {
			t.Errorf("admin of B: %d %+v", code, pg)
		}
		// A community's owner reads its chain too.
		ob, ok := st.(interface {
			CreateCommunity(context.Context, store.NewCommunity) (store.Community, bool, error)
		})
		if !ok {
			t.Fatal("backend has no operator registry")
		}
		owner := relaytest.NewUser()
		if _, _, err := ob.CreateCommunity(ctx, store.NewCommunity{Host: "owned.example", OwnerPubKey: owner.PK}); err != nil {
			t.Fatal(err)
		}
		if code, pg = get(&owner, "owned.example", "", ""); code != http.StatusOK || len(pg.Entries) != 1 || pg.Entries[0].Action != string(audit.CommunityProvisioned) {
			t.Errorf("owner: %d %+v", code, pg)
		}
		if code, _ = get(&owner, hostA, "", ""); code != http.StatusForbidden {
			t.Errorf("owner of another community on A: %d", code)
		}
		// Unmapped host.
		if code, _ = get(&adminA, "nobody.example", "", ""); code != http.StatusNotFound {
			t.Errorf("unmapped host: %d", code)
		}
	})
}

// TestMountNeeds: the feature needs HTTP authentication and a store that
// keeps audit chains.
func TestMountNeeds(t *testing.T) {
	st := relaytest.Embedded(t)
	_, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithFeature(audithttp.New()))
	if err == nil || !strings.HasPrefix(err.Error(), "audithttp: ") {
		t.Fatalf("without WithHTTPAuth: %v", err)
	}
}
