package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
)

// DMBackend is a backend with DM conversations.
type DMBackend interface {
	store.Backend
	store.ChannelStore
	store.DMStore
}

// RunDMs is the conformance suite of store.DMStore.
func RunDMs(t *testing.T, open func(t *testing.T) DMBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b DMBackend)
	}{
		{"OpenHideReopen", testDMOpenHide},
		{"PerCommunity", testDMPerCommunity},
		{"ConcurrentOpens", testDMConcurrent},
		{"Authority", testDMAuthority},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func dmUsers(t *testing.T, n int) []string {
	var out []string
	for range n {
		out = append(out, NewAuthor(t).PubKey)
	}
	slices.Sort(out)
	return out
}

func testDMOpenHide(t *testing.T, b DMBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "dms.example")
	if err != nil {
		t.Fatal(err)
	}
	ps := dmUsers(t, 3)
	ch, created, err := b.OpenDM(ctxb(), c, ps[0], ps, 1_700_000_000)
	if err != nil || !created {
		t.Fatalf("open: %v %v", created, err)
	}
	if ch.ID != channel.DMID(ps) || ch.Type != channel.TypeDM || ch.Visibility != channel.VisibilityPrivate ||
		!ch.Closed || !ch.Restricted || !ch.Hidden || ch.Name != "Group DM (3)" || ch.CreatedBy != ps[0] {
		t.Fatalf("conversation %+v", ch)
	}
	members, err := b.ChannelMembers(ctxb(), c, ch.ID)
	if err != nil || len(members) != 3 {
		t.Fatalf("members %v %v", members, err)
	}
	for i, m := range members {
		if m.PubKey != ps[i] || m.Role != channel.RoleMember {
			t.Fatalf("member %d: %+v", i, m)
		}
	}
	if _, created, err := b.OpenDM(ctxb(), c, ps[1], ps, 1_700_000_001); err != nil || created {
		t.Fatalf("second open: %v %v", created, err)
	}
	// Malformed sets.
	for _, bad := range [][]string{ps[:1], {ps[1], ps[0]}, append(slices.Clone(ps), ps[2])} {
		if _, _, err := b.OpenDM(ctxb(), c, ps[0], bad, 1); !errors.Is(err, channel.ErrInvalidCommand) {
			t.Fatalf("open %v: %v", bad, err)
		}
	}
	if _, _, err := b.OpenDM(ctxb(), c, NewAuthor(t).PubKey, ps, 1); !errors.Is(err, channel.ErrInvalidCommand) {
		t.Fatalf("open by a non-participant: %v", err)
	}

	// Hide is per participant; opening again clears it.
	if err := b.HideDM(ctxb(), c, ch.ID, ps[0]); err != nil {
		t.Fatal(err)
	}
	hidden, err := b.HiddenDMs(ctxb(), c, ps[0])
	if err != nil || !slices.Equal(hidden, []channel.ID{ch.ID}) {
		t.Fatalf("hidden %v %v", hidden, err)
	}
	if hidden, _ := b.HiddenDMs(ctxb(), c, ps[1]); len(hidden) != 0 {
		t.Fatalf("another participant's hidden set %v", hidden)
	}
	if err := b.HideDM(ctxb(), c, ch.ID, NewAuthor(t).PubKey); !errors.Is(err, channel.ErrNotMember) {
		t.Fatalf("hide by a non-member: %v", err)
	}
	if err := b.HideDM(ctxb(), c, channel.DMID(dmUsers(t, 2)), ps[0]); !errors.Is(err, channel.ErrNoChannel) {
		t.Fatalf("hide of no conversation: %v", err)
	}
	if _, _, err := b.OpenDM(ctxb(), c, ps[0], ps, 1_700_000_002); err != nil {
		t.Fatal(err)
	}
	if hidden, _ := b.HiddenDMs(ctxb(), c, ps[0]); len(hidden) != 0 {
		t.Fatalf("hidden after reopening %v", hidden)
	}
}

func testDMPerCommunity(t *testing.T, b DMBackend) {
	a, _, err := b.EnsureCommunity(ctxb(), "dm-a.example")
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := b.EnsureCommunity(ctxb(), "dm-b.example")
	if err != nil {
		t.Fatal(err)
	}
	ps := dmUsers(t, 2)
	ch, _, err := b.OpenDM(ctxb(), a, ps[0], ps, 1_700_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Channel(ctxb(), o, ch.ID); !errors.Is(err, channel.ErrNoChannel) {
		t.Fatalf("the conversation from another community: %v", err)
	}
	if err := b.HideDM(ctxb(), o, ch.ID, ps[0]); !errors.Is(err, channel.ErrNoChannel) {
		t.Fatalf("hide from another community: %v", err)
	}
	if err := b.HideDM(ctxb(), a, ch.ID, ps[0]); err != nil {
		t.Fatal(err)
	}
	if hidden, _ := b.HiddenDMs(ctxb(), o, ps[0]); len(hidden) != 0 {
		t.Fatalf("hidden set in another community %v", hidden)
	}
	if _, created, err := b.OpenDM(ctxb(), o, ps[1], ps, 1_700_000_000); err != nil || !created {
		t.Fatalf("the same participants in another community: %v %v", created, err)
	}
}

func testDMConcurrent(t *testing.T, b DMBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "dm-race.example")
	if err != nil {
		t.Fatal(err)
	}
	ps := dmUsers(t, 4)
	var wg sync.WaitGroup
	var mu sync.Mutex
	createdN := 0
	for i := range 8 {
		wg.Go(func() {
			_, created, err := b.OpenDM(ctxb(), c, ps[i%len(ps)], ps, 1_700_000_000)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if created {
				createdN++
			}
		})
	}
	wg.Wait()
	if createdN != 1 {
		t.Fatalf("%d opens created the conversation", createdN)
	}
}

func testDMAuthority(t *testing.T, b DMBackend) {
	c, _, err := b.EnsureCommunity(ctxb(), "dm-authority.example")
	if err != nil {
		t.Fatal(err)
	}
	ps := dmUsers(t, 2)
	mark := func(id byte) context.Context {
		return store.WithAuthority(ctxb(), store.Authority{Community: c, Event: reactionID(id), Until: time.Now().Add(time.Hour)})
	}
	ch, _, err := b.OpenDM(mark('1'), c, ps[0], ps, 1_700_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.OpenDM(mark('1'), c, ps[0], ps, 1_700_000_000); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("replayed open: %v", err)
	}
	if err := b.HideDM(mark('2'), c, ch.ID, ps[1]); err != nil {
		t.Fatal(err)
	}
	if err := b.HideDM(mark('2'), c, ch.ID, ps[0]); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("replayed hide: %v", err)
	}
	if hidden, _ := b.HiddenDMs(ctxb(), c, ps[0]); len(hidden) != 0 {
		t.Fatalf("a replayed hide hid %v", hidden)
	}
	// A refused write records no mark.
	if err := b.HideDM(mark('3'), c, ch.ID, NewAuthor(t).PubKey); !errors.Is(err, channel.ErrNotMember) {
		t.Fatal(err)
	}
	if err := b.HideDM(mark('3'), c, ch.ID, ps[0]); err != nil {
		t.Fatalf("a mark consumed by a refusal: %v", err)
	}
}
