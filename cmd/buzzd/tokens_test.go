package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
)

// TestAdminTokenCLI: "buzzd admin token mint|list|revoke" on both
// backends. The minted token (printed once) authenticates as its pubkey
// with its scopes; a listing never shows a token; only the owner or an
// admin may be the -actor of a mint; a revocation is refused on a second
// try and another community sees none of it.
func TestAdminTokenCLI(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		adminTokenCLI(t, map[string]string{"BUZZ_DATA_DIR": dir}, func(t *testing.T) adminStore {
			st, err := embedded.Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			return st
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := freshDatabase(t)
		adminTokenCLI(t, map[string]string{"DATABASE_URL": url, "BUZZ_AUTO_MIGRATE": "on"}, func(t *testing.T) adminStore {
			st, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			return st
		})
	})
}

func adminTokenCLI(t *testing.T, env map[string]string, open func(t *testing.T) adminStore) {
	env["RELAY_URL"] = "ws://boot.example"
	env["BUZZ_LOG_LEVEL"] = "error"
	_, owner := newKey(t)
	_, admin := newKey(t)
	_, member := newKey(t)
	_, bot := newKey(t)
	ctx := context.Background()
	run := func(args ...string) (string, error) {
		t.Helper()
		return adminRun(t, env, args...)
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("admin %v: %v", args, err)
		}
		return out
	}
	must("community", "add", "a.example", "-owner", owner)
	must("community", "add", "b.example", "-owner", owner)
	must("member", "add", "a.example", admin, "-role", "admin")
	must("member", "add", "a.example", member)

	var minted tokenJSON
	out := must("token", "mint", "a.example", bot, "-scopes", "messages:write, messages:read", "-name", "ci bot", "-expires", "30d", "-actor", admin, "-json")
	if err := json.Unmarshal([]byte(out), &minted); err != nil {
		t.Fatalf("mint -json: %v\n%s", err, out)
	}
	if !apitoken.WellFormed(minted.Token) || minted.PubKey != bot || minted.Name != "ci bot" || minted.CreatedBy != admin ||
		strings.Join(minted.Scopes, ",") != "messages:read,messages:write" || minted.ExpiresAt == nil || minted.Status != "minted" {
		t.Fatalf("minted %+v", minted)
	}
	human := must("token", "mint", "a.example", bot, "-scopes", "users:write")
	if !strings.Contains(human, apitoken.Prefix) || !strings.Contains(human, "shown once") || !strings.Contains(human, "expires never") {
		t.Fatalf("mint output:\n%s", human)
	}

	// Refusals change nothing.
	for name, args := range map[string][]string{
		"a member as actor": {"token", "mint", "a.example", bot, "-scopes", "messages:read", "-actor", member},
		"unknown scope":     {"token", "mint", "a.example", bot, "-scopes", "messages:read,root"},
		"no scopes":         {"token", "mint", "a.example", bot},
		"bad expiry":        {"token", "mint", "a.example", bot, "-scopes", "messages:read", "-expires", "soon"},
		"too long":          {"token", "mint", "a.example", bot, "-scopes", "messages:read", "-expires", "400d"},
		"bad pubkey":        {"token", "mint", "a.example", "bot", "-scopes", "messages:read"},
		"unknown host":      {"token", "mint", "c.example", bot, "-scopes", "messages:read"},
	} {
		if out, err := run(args...); err == nil {
			t.Errorf("%s: accepted\n%s", name, out)
		}
	}

	var list []tokenJSON
	if err := json.Unmarshal([]byte(must("token", "list", "a.example", "-json")), &list); err != nil || len(list) != 2 {
		t.Fatalf("list: %v %+v", err, list)
	}
	for _, j := range list {
		if j.Token != "" {
			t.Fatal("a listing shows a token")
		}
	}
	if table := must("token", "list", "a.example"); strings.Contains(table, apitoken.Prefix) || !strings.Contains(table, minted.ID) {
		t.Fatalf("list table:\n%s", table)
	}
	if err := json.Unmarshal([]byte(must("token", "list", "b.example", "-json")), &list); err != nil || len(list) != 0 {
		t.Fatalf("b lists %+v %v", list, err)
	}

	st := open(t)
	defer st.Close()
	svc, err := apitoken.New(st.(store.TokenStore))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := st.CommunityByHost(ctx, "a.example")
	b, _ := st.CommunityByHost(ctx, "b.example")
	g, err := svc.Authenticate(ctx, a.ID, minted.Token)
	if err != nil || g.PubKey != bot || !g.Allows(apitoken.MessagesWrite) || g.Allows(apitoken.UsersWrite) {
		t.Fatalf("minted token authenticates as %+v %v", g, err)
	}
	if _, err := svc.Authenticate(ctx, b.ID, minted.Token); err != apitoken.ErrInvalidToken {
		t.Fatalf("a's token on b: %v", err)
	}
	if _, err := run("token", "revoke", "b.example", minted.ID); err == nil {
		t.Fatal("revoked through another community")
	}
	var rev tokenJSON
	if err := json.Unmarshal([]byte(must("token", "revoke", "a.example", minted.ID, "-actor", owner, "-json")), &rev); err != nil || rev.Status != "revoked" || rev.RevokedAt == nil {
		t.Fatalf("revoke: %+v %v", rev, err)
	}
	if out := must("token", "revoke", "a.example", minted.ID); !strings.HasPrefix(out, "already revoked") {
		t.Fatalf("second revoke: %s", out)
	}
	if _, err := svc.Authenticate(ctx, a.ID, minted.Token); err != apitoken.ErrTokenRevoked {
		t.Fatalf("revoked token: %v", err)
	}
	if role, _, _ := st.CommunityRole(ctx, a.ID, admin); role != channel.RoleAdmin {
		t.Fatalf("admin's role %q", role)
	}
}
