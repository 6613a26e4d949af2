package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// ProfileBackend is a backend that keeps community profiles and audits
// their changes.
type ProfileBackend interface {
	store.Backend
	store.ProfileStore
	store.AuditLog
}

// RunProfiles is the conformance suite of store.ProfileStore: a profile is
// empty until set, belongs to its community only, is replaced whole,
// refuses invalid values without changing anything, and every change is
// audited with its actor.
func RunProfiles(t *testing.T, open func(t *testing.T) ProfileBackend) {
	b := open(t)
	ctx := ctxb()
	a, _, err := b.EnsureCommunity(ctx, "profile-a.example")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := b.EnsureCommunity(ctx, "profile-b.example")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := b.CommunityProfile(ctx, a); err != nil || p != (store.CommunityProfile{}) {
		t.Fatalf("unset profile: %+v, %v", p, err)
	}
	want := store.CommunityProfile{Name: "Team A", Description: "line one\nline two", Icon: "https://a.example/icon.png", Contact: "mailto:ops@a.example"}
	owner := strings.Repeat("ab", 32)
	if err := b.SetCommunityProfile(audit.WithActor(ctx, owner), a, want); err != nil {
		t.Fatal(err)
	}
	if p, err := b.CommunityProfile(ctx, a); err != nil || p != want {
		t.Fatalf("profile = %+v, %v; want %+v", p, err, want)
	}
	if p, err := b.CommunityProfile(ctx, other); err != nil || p != (store.CommunityProfile{}) {
		t.Fatalf("the other community's profile changed: %+v, %v", p, err)
	}
	for _, bad := range []store.CommunityProfile{
		{Name: strings.Repeat("x", store.MaxProfileName+1)},
		{Name: "bell\a"},
		{Icon: "javascript:alert(1)"},
		{Icon: "/relative.png"},
		{Description: "\xff"},
	} {
		if err := b.SetCommunityProfile(ctx, a, bad); !errors.Is(err, store.ErrInvalidProfile) {
			t.Fatalf("SetCommunityProfile(%+v) = %v, want ErrInvalidProfile", bad, err)
		}
	}
	if p, _ := b.CommunityProfile(ctx, a); p != want {
		t.Fatalf("a refused profile changed the stored one: %+v", p)
	}
	// Replaced whole: fields left empty are cleared.
	if err := b.SetCommunityProfile(ctx, a, store.CommunityProfile{Name: "Renamed"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := b.CommunityProfile(ctx, a); p != (store.CommunityProfile{Name: "Renamed"}) {
		t.Fatalf("after replace: %+v", p)
	}
	unknown := tenant.NewCommunityID()
	if _, err := b.CommunityProfile(ctx, unknown); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("unknown community: %v", err)
	}
	if err := b.SetCommunityProfile(ctx, unknown, want); !errors.Is(err, store.ErrNoCommunity) {
		t.Fatalf("set on unknown community: %v", err)
	}
	es, err := b.AuditEntries(ctx, a, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, e := range es {
		if e.Action == store.AuditProfileChanged {
			found++
			if found == 1 && e.Actor != owner {
				t.Fatalf("audit actor %q, want %q", e.Actor, owner)
			}
		}
	}
	if found != 2 {
		t.Fatalf("%d profile audit entries, want 2: %+v", found, es)
	}
	if es, _ := b.AuditEntries(ctx, other, 0, 100); len(es) != 0 {
		t.Fatalf("entries in the other community's chain: %+v", es)
	}
}
