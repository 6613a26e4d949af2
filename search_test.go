package buzz

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip17"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// leakedRelay is backendRelay left running after the test: go-nostr
// connections must never be closed (see testRelay.leak).
func leakedRelay(t *testing.T, st store.Backend, opts ...Option) *testRelay {
	t.Helper()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	relay, err := New(append([]Option{WithStore(st), WithDirectory(st), WithChannels(), WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h = relay
	return &testRelay{t: t, relay: relay, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http"), host: host, leak: true}
}

// TestSearchOverWebSocket checks NIP-50 end to end on both backends:
// go-nostr's REQ and COUNT with a search, relevance order and the limit
// (raw frames, since go-nostr reorders stored events), private channels
// readable by members only, gift wraps never found, live delivery of new
// matching events only, and a second community on the same store that
// neither finds nor counts the first one's events.
func TestSearchOverWebSocket(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		a := leakedRelay(t, st, WithRelayKey(testMaster))
		b := backendRelay(t, st, WithRelayKey(testMaster))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		owner, member, alice := newSigner(t), newSigner(t), newSigner(t)

		oc := a.dial(t) // the owner's commands authenticate this connection
		priv := oc.createChannel(owner, "private", channel.VisibilityPrivate)
		eq(t, "put member", oc.command(owner, nostr.KindPutUser, priv, nostr.Tag{"p", member.Pub()}).OK, true)
		c := a.dial(t) // anonymous
		once := owner.Event(1, now()-30, "an espresso before the meeting")
		twice := owner.Event(1, now()-20, "espresso, then more Espresso!")
		other := owner.Event(1, now()-10, "tea only")
		secret := member.Event(nostr.KindChatMessage, now()-5, "espresso plans in private", chanTag(priv))
		for _, e := range []*nostr.Event{once, twice, other, secret} {
			c.MustAccept(e)
		}
		wrap, err := nip17.Message(owner.SK, alice.Pub(), "espresso for alice")
		if err != nil {
			t.Fatal(err)
		}
		c.MustAccept(wrap)

		// Relevance first, the limit after ranking; the private message and
		// the gift wrap are not found by an anonymous reader.
		search := nostr.Filter{Search: "ESPRESSO"}
		eq(t, "ranked", slices.Equal(ids(c.Req("r", search)), []string{twice.ID, once.ID}), true)
		top := search
		top.Limit, top.LimitSet = 1, true
		eq(t, "limit after ranking", slices.Equal(ids(c.Req("l", top)), []string{twice.ID}), true)
		eq(t, "anonymous COUNT", countOf(t, c, "n", search), int64(2))
		// A member reads the private channel's match; the recipient of the
		// gift wrap still does not find it by search.
		m := a.dial(t)
		m.AuthAs(member, a.host)
		eq(t, "member finds", slices.Equal(ids(m.Req("r", search)), []string{twice.ID, secret.ID, once.ID}), true)
		eq(t, "member COUNT", countOf(t, m, "n", search), int64(3))
		al := a.dial(t)
		al.AuthAs(alice, a.host)
		eq(t, "gift wrap recipient", len(al.Req("w", nostr.Filter{Search: "alice"})), 0)
		// A search naming the private channel is refused like any read.
		hs := hFilter(priv)
		hs.Search = "espresso"
		c.SendRaw(nostr.AppendReq(nil, "h", hs))
		c.ExpectClosed("h", "auth-required:")
		// A bad query is refused with invalid: and changes nothing.
		c.SendRaw([]byte(`["REQ","bad",{"search":"  !!! "}]`))
		eq(t, "bad query", c.ExpectClosed("bad", "invalid:"), "invalid: search query has no words to match")

		// The other community on the same store finds and counts nothing.
		cb := b.dial(t)
		eq(t, "B finds", len(cb.Req("r", search)), 0)
		eq(t, "B COUNT", countOf(t, cb, "n", search), int64(0))
		cb.MustAccept(owner.Event(1, now(), "espresso in B"))

		// go-nostr: stored matches as a set, COUNT, then live delivery.
		rl, err := gonostr.RelayConnect(context.Background(), a.url)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := rl.Subscribe(ctx, gonostr.Filters{{Search: "espresso"}})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for eose := false; !eose || len(got) < 2; {
			select {
			case ev := <-sub.Events:
				got[ev.ID] = true
			case <-sub.EndOfStoredEvents:
				eose = true
			case <-ctx.Done():
				t.Fatalf("stored search results: %v", got)
			}
		}
		if len(got) != 2 || !got[once.ID] || !got[twice.ID] {
			t.Fatalf("go-nostr stored results %v", got)
		}
		n, _, err := rl.Count(ctx, gonostr.Filters{{Search: "espresso", Kinds: []int{1}}})
		if err != nil || n != 2 {
			t.Fatalf("go-nostr COUNT = %d, %v", n, err)
		}
		c.MustAccept(owner.Event(1, now(), "green tea"))
		wrap2, err := nip17.Message(owner.SK, alice.Pub(), "espresso again")
		if err != nil {
			t.Fatal(err)
		}
		c.MustAccept(wrap2)
		c.MustAccept(member.Event(nostr.KindChatMessage, now(), "private espresso", chanTag(priv)))
		cb.MustAccept(owner.Event(1, now(), "espresso elsewhere"))
		live := owner.Event(1, now(), "Fresh espresso, live")
		c.MustAccept(live)
		select {
		case ev := <-sub.Events:
			if ev.ID != live.ID {
				t.Fatalf("live search delivered %s %q, want %s", ev.ID, ev.Content, live.ID)
			}
		case <-ctx.Done():
			t.Fatal("live match not delivered")
		}
		// A second match, published after: the subscription's next event
		// (none of the non-matching ones before it).
		sentinel := owner.Event(1, now(), "espresso sentinel")
		c.MustAccept(sentinel)
		select {
		case ev := <-sub.Events:
			if ev.ID != sentinel.ID {
				t.Fatalf("unexpected live delivery %q", ev.Content)
			}
		case <-ctx.Done():
			t.Fatal("live match not delivered")
		}
	})
}
