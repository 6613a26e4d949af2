package tokenhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/apitoken/tokenhttp"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/store"
)

// bearer sends method path with the token as a Bearer credential.
func bearer(t *testing.T, r *relaytest.Relay, token, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, r.Srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = r.Host
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer %s: %v", b, err)
	}
	return m
}

// TestTokensOverHTTP: a community's owner and admins mint (shown once),
// list and revoke its tokens with NIP-98 on its host; members, strangers,
// tokens and other communities' hosts cannot; a bad request mints
// nothing; a revoked token is refused at once.
func TestTokensOverHTTP(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		ctx := context.Background()
		svc, err := apitoken.New(st.(store.TokenStore))
		if err != nil {
			t.Fatal(err)
		}
		r := relaytest.Serve(t, st, buzz.WithAPITokens(svc), buzz.WithFeature(tokenhttp.New(svc)))
		a, err := st.LookupHost(ctx, r.Host)
		if err != nil {
			t.Fatal(err)
		}
		// B has an owner (set when the operator creates it); A two admins.
		const hostB = "b.example"
		ownerB := relaytest.NewUser()
		ob, ok := st.(interface {
			CreateCommunity(context.Context, store.NewCommunity) (store.Community, bool, error)
		})
		if !ok {
			t.Fatal("backend has no operator registry")
		}
		if _, _, err := ob.CreateCommunity(ctx, store.NewCommunity{Host: hostB, OwnerPubKey: ownerB.PK}); err != nil {
			t.Fatal(err)
		}
		owner, admin, member, stranger := relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser()
		for u, role := range map[relaytest.User]channel.Role{owner: channel.RoleAdmin, admin: channel.RoleAdmin, member: channel.RoleMember} {
			if err := st.PutCommunityMember(ctx, a, u.PK, role); err != nil {
				t.Fatal(err)
			}
		}
		body := []byte(`{"name":"ci bot","scopes":["messages:read"],"expires_in":86400}`)

		// B's owner mints on B's host.
		code, _, raw := r.Do(&ownerB, http.MethodPost, hostB, "", tokenhttp.Path, body)
		relaytest.Eq(t, "B's owner mints ("+string(raw)+")", code, http.StatusCreated)
		relaytest.Eq(t, "acting as B's owner", decode(t, raw)["pubkey"], any(ownerB.PK))

		// An admin mints: the token acts as the admin and works at once.
		code, _, raw = r.Do(&owner, http.MethodPost, r.Host, "", tokenhttp.Path, body)
		relaytest.Eq(t, "admin mints ("+string(raw)+")", code, http.StatusCreated)
		minted := decode(t, raw)
		token, _ := minted["token"].(string)
		id, _ := minted["id"].(string)
		if !strings.HasPrefix(token, "buzz_") || id == "" || minted["pubkey"] != owner.PK || minted["expires_at"] == nil {
			t.Fatalf("minted %s", raw)
		}
		code, raw = bearer(t, r, token, http.MethodPost, "/query", []byte(`{"kinds":[1]}`))
		relaytest.Eq(t, "query with the new token ("+string(raw)+")", code, http.StatusOK)
		code, _, raw = r.Do(&admin, http.MethodPost, r.Host, "", tokenhttp.Path, []byte(`{"name":"admin's","scopes":["channels:read"]}`))
		relaytest.Eq(t, "another admin mints ("+string(raw)+")", code, http.StatusCreated)
		relaytest.Eq(t, "no expiry", decode(t, raw)["expires_at"], any(nil))

		// Who may not.
		for name, u := range map[string]relaytest.User{"member": member, "stranger": stranger, "B's owner": ownerB} {
			code, _, raw := r.Do(&u, http.MethodPost, r.Host, "", tokenhttp.Path, body)
			relaytest.Eq(t, name+" mints ("+string(raw)+")", code, http.StatusForbidden)
			relaytest.Eq(t, name+"'s refusal", decode(t, raw)["message"], any(tokenhttp.MsgNotAdmin))
		}
		code, raw = bearer(t, r, token, http.MethodPost, tokenhttp.Path, body)
		relaytest.Eq(t, "a token mints ("+string(raw)+")", code, http.StatusForbidden)
		relaytest.Eq(t, "its refusal", decode(t, raw)["message"], any(tokenhttp.MsgTokenAuth))
		code, _, _ = r.Do(nil, http.MethodGet, r.Host, "", tokenhttp.Path, nil)
		relaytest.Eq(t, "unauthenticated list", code, http.StatusUnauthorized)

		// Bad requests mint nothing.
		for _, bad := range []string{
			`{"name":"x","scopes":["messages:delete"]}`, `{"name":"x","scopes":[]}`, `{"name":"","scopes":["messages:read"]}`,
			`{"name":"x","scopes":["messages:read"],"expires_in":60}`, `{"name":"x","scopes":["messages:read"],"expires_in":-1}`,
			`{"name":"x","scopes":["messages:read"],"pubkey":"` + member.PK + `"}`, `[]`, `{"name":"x"} {}`,
		} {
			code, _, raw := r.Do(&owner, http.MethodPost, r.Host, "", tokenhttp.Path, []byte(bad))
			relaytest.Eq(t, bad+" ("+string(raw)+")", code, http.StatusBadRequest)
			if m := decode(t, raw)["message"].(string); !strings.HasPrefix(m, "invalid: ") {
				t.Fatalf("%s: message %q", bad, m)
			}
		}

		// The list shows both tokens, never a token itself.
		code, _, raw = r.Do(&admin, http.MethodGet, r.Host, "", tokenhttp.Path, nil)
		relaytest.Eq(t, "list ("+string(raw)+")", code, http.StatusOK)
		if strings.Contains(string(raw), "buzz_") || strings.Count(string(raw), `"id"`) != 2 || !strings.Contains(string(raw), `"created_by":"`+owner.PK+`"`) {
			t.Fatalf("list: %s", raw)
		}
		code, _, raw = r.Do(&ownerB, http.MethodGet, hostB, "", tokenhttp.Path, nil)
		relaytest.Eq(t, "B's list ("+string(raw)+")", code, http.StatusOK)
		if strings.Count(string(raw), `"id"`) != 1 || !strings.Contains(string(raw), ownerB.PK) || strings.Contains(string(raw), owner.PK) {
			t.Fatalf("B's list holds exactly B's token: %s", raw)
		}

		// Revocation: not from another community's host; then refused at once.
		code, _, _ = r.Do(&ownerB, http.MethodDelete, hostB, "", tokenhttp.Path+"/"+id, nil)
		relaytest.Eq(t, "revoke A's token on B's host", code, http.StatusNotFound)
		code, raw = bearer(t, r, token, http.MethodPost, "/query", []byte(`{"kinds":[1]}`))
		relaytest.Eq(t, "token after B's attempt ("+string(raw)+")", code, http.StatusOK)
		code, _, raw = r.Do(&admin, http.MethodDelete, r.Host, "", tokenhttp.Path+"/"+id, nil)
		relaytest.Eq(t, "revoke ("+string(raw)+")", code, http.StatusOK)
		relaytest.Eq(t, "revoked", decode(t, raw)["revoked"], any(true))
		code, _ = bearer(t, r, token, http.MethodPost, "/query", []byte(`{"kinds":[1]}`))
		relaytest.Eq(t, "revoked token", code, http.StatusUnauthorized)
		code, _, raw = r.Do(&owner, http.MethodDelete, r.Host, "", tokenhttp.Path+"/"+id, nil)
		relaytest.Eq(t, "revoke again", code, http.StatusOK)
		relaytest.Eq(t, "not revoked again", decode(t, raw)["revoked"], any(false))
		code, _, _ = r.Do(&owner, http.MethodDelete, r.Host, "", tokenhttp.Path+"/"+strings.Repeat("0", 32), nil)
		relaytest.Eq(t, "revoke an unknown id", code, http.StatusNotFound)

		// Minting and revoking are in A's audit chain with their actor.
		entries, err := st.AuditEntries(ctx, a, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var minters, revokers []string
		for _, e := range entries {
			switch e.Action {
			case store.AuditTokenMinted:
				minters = append(minters, e.Actor)
			case store.AuditTokenRevoked:
				revokers = append(revokers, e.Actor)
			}
		}
		if len(minters) != 2 || minters[0] != owner.PK || minters[1] != admin.PK || len(revokers) < 1 || revokers[0] != admin.PK {
			t.Fatalf("audit: minted by %v, revoked by %v", minters, revokers)
		}
	})
}
