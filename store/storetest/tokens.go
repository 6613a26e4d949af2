package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// TokenBackend is a backend with API tokens.
type TokenBackend interface {
	store.Backend
	store.TokenStore
	store.AuditLog
}

// RunAPITokens is the conformance suite of store.TokenStore.
func RunAPITokens(t *testing.T, open func(t *testing.T) TokenBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b TokenBackend)
	}{
		{"CreateLookupRevoke", testTokenLifecycle},
		{"PerCommunity", testTokenPerCommunity},
		{"ActiveLimit", testTokenLimit},
		{"ConcurrentLimit", testTokenConcurrentLimit},
		{"Audit", testTokenAudit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var tokenT0 = time.Unix(base, 0).UTC()

func newToken(c tenant.CommunityID, owner string, i int) store.APIToken {
	return store.APIToken{Community: c, ID: fmt.Sprintf("%032x", i), Hash: sha256.Sum256(fmt.Appendf(nil, "token %d", i)),
		Owner: owner, Name: fmt.Sprintf("bot %d", i), Scopes: []string{"messages:read", "messages:write"}, CreatedAt: tokenT0}
}

// testTokenLifecycle: a created token is found by hash with what was
// stored, listed newest first; a revocation marks it once.
func testTokenLifecycle(t *testing.T, b TokenBackend) {
	ctx := ctxb()
	c := Community(t, b, "tokens.example")
	owner := NewAuthor(t).PubKey
	t1 := newToken(c, owner, 1)
	t1.ExpiresAt = tokenT0.Add(24 * time.Hour)
	t2 := newToken(c, owner, 2)
	t2.CreatedAt = tokenT0.Add(time.Second)
	t2.CreatedBy = NewAuthor(t).PubKey
	mustNil(t, b.CreateAPIToken(ctx, t1))
	mustNil(t, b.CreateAPIToken(ctx, t2))
	got, err := b.APITokenByHash(ctx, c, t1.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != t1.ID || got.Owner != owner || got.Name != t1.Name || len(got.Scopes) != 2 || got.Scopes[1] != "messages:write" ||
		!got.CreatedAt.Equal(t1.CreatedAt) || !got.ExpiresAt.Equal(t1.ExpiresAt) || got.Revoked() || got.Community != c {
		t.Fatalf("stored %+v, read %+v", t1, got)
	}
	if got, _ := b.APITokenByHash(ctx, c, t2.Hash); !got.ExpiresAt.IsZero() || got.CreatedBy != t2.CreatedBy {
		t.Fatalf("token without expiry read as %+v", got)
	}
	if _, err := b.APITokenByHash(ctx, c, sha256.Sum256([]byte("nope"))); !errors.Is(err, store.ErrNoToken) {
		t.Fatalf("unknown hash: %v", err)
	}
	list, err := b.APITokens(ctx, c)
	if err != nil || len(list) != 2 || list[0].ID != t2.ID || list[1].ID != t1.ID {
		t.Fatalf("list %+v %v", list, err)
	}
	at := tokenT0.Add(time.Hour)
	r, changed, err := b.RevokeAPIToken(ctx, c, t1.ID, at)
	if err != nil || !changed || r.ID != t1.ID || !r.RevokedAt.Equal(at) {
		t.Fatalf("revoke: %+v %v %v", r, changed, err)
	}
	if _, changed, err := b.RevokeAPIToken(ctx, c, t1.ID, at.Add(time.Hour)); err != nil || changed {
		t.Fatalf("second revoke: %v %v", changed, err)
	}
	got, err = b.APITokenByHash(ctx, c, t1.Hash)
	if err != nil || !got.Revoked() || !got.RevokedAt.Equal(at) {
		t.Fatalf("revoked token read as %+v %v", got, err)
	}
	if _, _, err := b.RevokeAPIToken(ctx, c, fmt.Sprintf("%032x", 99), at); !errors.Is(err, store.ErrNoToken) {
		t.Fatalf("revoke of an unknown id: %v", err)
	}
}

// testTokenPerCommunity: a token of one community is never found, listed
// or revoked through another, even with the same hash and id.
func testTokenPerCommunity(t *testing.T, b TokenBackend) {
	ctx := ctxb()
	a, o := Community(t, b, "a.example"), Community(t, b, "b.example")
	owner := NewAuthor(t).PubKey
	ta := newToken(a, owner, 1)
	mustNil(t, b.CreateAPIToken(ctx, ta))
	if _, err := b.APITokenByHash(ctx, o, ta.Hash); !errors.Is(err, store.ErrNoToken) {
		t.Fatalf("token of a found on b: %v", err)
	}
	if list, err := b.APITokens(ctx, o); err != nil || len(list) != 0 {
		t.Fatalf("b lists %+v %v", list, err)
	}
	if _, _, err := b.RevokeAPIToken(ctx, o, ta.ID, tokenT0); !errors.Is(err, store.ErrNoToken) {
		t.Fatalf("revoke through b: %v", err)
	}
	// The same hash and id may exist in b; each community sees its own.
	tb := ta
	tb.Community, tb.Name = o, "other"
	mustNil(t, b.CreateAPIToken(ctx, tb))
	if got, err := b.APITokenByHash(ctx, a, ta.Hash); err != nil || got.Name != ta.Name || got.Revoked() {
		t.Fatalf("a's token: %+v %v", got, err)
	}
	if _, _, err := b.RevokeAPIToken(ctx, o, tb.ID, tokenT0); err != nil {
		t.Fatal(err)
	}
	if got, err := b.APITokenByHash(ctx, a, ta.Hash); err != nil || got.Revoked() {
		t.Fatalf("revocation in b reached a: %+v %v", got, err)
	}
	if _, err := b.APITokenByHash(ctx, tenant.CommunityID{}, ta.Hash); !errors.Is(err, store.ErrNoToken) {
		t.Fatalf("zero community: %v", err)
	}
}

// testTokenLimit: an owner holds at most MaxActiveTokens active tokens
// per community; revoked and expired ones do not count, nor do other
// owners' or other communities'.
func testTokenLimit(t *testing.T, b TokenBackend) {
	ctx := ctxb()
	c, o := Community(t, b, "a.example"), Community(t, b, "b.example")
	owner := NewAuthor(t).PubKey
	for i := range store.MaxActiveTokens {
		mustNil(t, b.CreateAPIToken(ctx, newToken(c, owner, i)))
	}
	if err := b.CreateAPIToken(ctx, newToken(c, owner, 100)); !errors.Is(err, store.ErrTokenLimit) {
		t.Fatalf("token %d: %v", store.MaxActiveTokens+1, err)
	}
	if _, err := b.APITokenByHash(ctx, c, newToken(c, owner, 100).Hash); !errors.Is(err, store.ErrNoToken) {
		t.Fatalf("refused token stored: %v", err)
	}
	mustNil(t, b.CreateAPIToken(ctx, newToken(c, NewAuthor(t).PubKey, 101)))
	mustNil(t, b.CreateAPIToken(ctx, newToken(o, owner, 102)))
	if _, _, err := b.RevokeAPIToken(ctx, c, newToken(c, owner, 0).ID, tokenT0); err != nil {
		t.Fatal(err)
	}
	mustNil(t, b.CreateAPIToken(ctx, newToken(c, owner, 103)))
	later := newToken(c, owner, 104)
	later.CreatedAt = tokenT0.Add(48 * time.Hour)
	if err := b.CreateAPIToken(ctx, later); !errors.Is(err, store.ErrTokenLimit) {
		t.Fatalf("at the limit again: %v", err)
	}
	short := newToken(o, owner, 105)
	short.ExpiresAt = tokenT0.Add(time.Hour)
	mustNil(t, b.CreateAPIToken(ctx, short))
	for i := 106; i < 106+store.MaxActiveTokens-2; i++ {
		mustNil(t, b.CreateAPIToken(ctx, newToken(o, owner, i)))
	}
	// o: 102, 105 (expires at t0+1h) and 8 more: at the limit at t0 ...
	if err := b.CreateAPIToken(ctx, newToken(o, owner, 200)); !errors.Is(err, store.ErrTokenLimit) {
		t.Fatalf("b at the limit: %v", err)
	}
	// ... and under it once 105 has expired.
	after := newToken(o, owner, 201)
	after.CreatedAt = tokenT0.Add(2 * time.Hour)
	mustNil(t, b.CreateAPIToken(ctx, after))
}

// testTokenConcurrentLimit: concurrent mints never pass the limit.
func testTokenConcurrentLimit(t *testing.T, b TokenBackend) {
	ctx := ctxb()
	c := Community(t, b, "a.example")
	owner := NewAuthor(t).PubKey
	const n = 2 * store.MaxActiveTokens
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = b.CreateAPIToken(ctx, newToken(c, owner, i)) })
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrTokenLimit):
			t.Fatalf("mint %d: %v", i, err)
		}
	}
	if ok != store.MaxActiveTokens {
		t.Fatalf("%d concurrent mints succeeded, want %d", ok, store.MaxActiveTokens)
	}
}

// testTokenAudit: minting and revoking are recorded in the community's
// chain with their actor; a refused mint and a repeated revocation are
// not.
func testTokenAudit(t *testing.T, b TokenBackend) {
	c := Community(t, b, "a.example")
	admin, owner := NewAuthor(t), NewAuthor(t)
	ctx := audit.WithActor(ctxb(), admin.PubKey)
	tk := newToken(c, owner.PubKey, 1)
	tk.ExpiresAt = tokenT0.Add(time.Hour)
	mustNil(t, b.CreateAPIToken(ctx, tk))
	if _, _, err := b.RevokeAPIToken(ctx, c, tk.ID, tokenT0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.RevokeAPIToken(ctx, c, tk.ID, tokenT0); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range AuditChain(t, b, c) {
		if e.Action == store.AuditTokenMinted || e.Action == store.AuditTokenRevoked {
			got = append(got, string(e.Action)+" "+e.Object+" "+e.Actor+" "+string(e.Detail))
		}
	}
	want := []string{
		string(store.AuditTokenMinted) + " " + tk.ID + " " + admin.PubKey + ` {"expires_at":"` + tk.ExpiresAt.Format(time.RFC3339) +
			`","name":"bot 1","pubkey":"` + owner.PubKey + `","scopes":["messages:read","messages:write"]}`,
		string(store.AuditTokenRevoked) + " " + tk.ID + " " + admin.PubKey + ` {"pubkey":"` + owner.PubKey + `"}`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit:\n got %q\nwant %q", got, want)
	}
	for _, e := range AuditChain(t, b, c) {
		if strings.Contains(string(e.Detail), fmt.Sprintf("%x", tk.Hash)) {
			t.Fatal("the audit chain holds a token hash")
		}
	}
}
