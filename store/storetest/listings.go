package storetest

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// ListingBackend is a backend that lists its whole registry and a
// community's channels (what an administrator's tools read).
type ListingBackend interface {
	ChannelBackend
	Communities(ctx context.Context) ([]store.Community, error)
	Channels(ctx context.Context, c tenant.CommunityID) ([]channel.Channel, error)
}

// RunListings is the conformance suite of the listings: Communities holds
// every community, oldest first; Channels holds one community's live
// channels only, oldest first, and nothing for an unknown community.
func RunListings(t *testing.T, open func(t *testing.T) ListingBackend) {
	b := open(t)
	ctx := ctxb()
	a, _, err := b.EnsureCommunity(ctx, "list-a.example")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := b.EnsureCommunity(ctx, "list-b.example")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := b.Communities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, c := range cs {
		hosts = append(hosts, c.Host)
	}
	if len(cs) != 2 || cs[0].ID != a || cs[1].ID != other || hosts[0] != "list-a.example" {
		t.Fatalf("Communities = %v", hosts)
	}
	owner := NewAuthor(t)
	first := CreateChannel(t, b, a, owner, "first", channel.VisibilityOpen)
	second := CreateChannel(t, b, a, owner, "second", channel.VisibilityPrivate)
	gone := CreateChannel(t, b, a, owner, "gone", channel.VisibilityOpen)
	MustApply(t, b, a, owner, channel.Command{Kind: nostr.KindDeleteChannel, Channel: gone})
	CreateChannel(t, b, other, owner, "elsewhere", channel.VisibilityOpen)
	chs, err := b.Channels(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	got := map[channel.ID]string{}
	for _, ch := range chs {
		got[ch.ID] = ch.Name
	}
	if len(chs) != 2 || got[first] != "first" || got[second] != "second" {
		t.Fatalf("Channels(a) = %+v", chs)
	}
	if chs, err := b.Channels(ctx, tenant.NewCommunityID()); err != nil || len(chs) != 0 {
		t.Fatalf("Channels(unknown) = %+v, %v", chs, err)
	}
}
