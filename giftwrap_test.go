package buzz

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip17"
	"github.com/buzzrelay/buzz/nostr/nip59"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

// backendRelay is a relay on st served over a real HTTP server, its host
// mapped to a community. The testRelay it returns has no sqlite store
// (store is nil): use it for dialing only.
func backendRelay(t testing.TB, st store.Backend, opts ...Option) *testRelay {
	t.Helper()
	ctx := context.Background()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
		t.Fatal(err)
	}
	relay, err := New(append([]Option{WithStore(st), WithDirectory(st), WithChannels(), WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h = relay
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = relay.Shutdown(ctx)
		srv.Close()
	})
	tc, err := tenant.Bind(ctx, st, host)
	if err != nil {
		t.Fatal(err)
	}
	return &testRelay{t: t, relay: relay, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http"), host: host, tc: tc}
}

// forBackends runs fn on a relay over the embedded store as buzzd opens it
// by default and over PostgreSQL (which pgtest requires under CI=true).
func forBackends(t *testing.T, fn func(t *testing.T, st store.Backend)) {
	t.Run("embedded", func(t *testing.T) {
		fn(t, openEmbedded(t, t.TempDir()))
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		fn(t, st)
	})
}

// TestGiftWrapsArePGated: a kind 1059 is read, counted and delivered live
// only on a connection authenticated as a pubkey its p tag names.
func TestGiftWrapsArePGated(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		tr := backendRelay(t, st)
		sender, alice, bob := newSigner(t), newSigner(t), newSigner(t)
		pub := tr.dial(t)
		wrap, err := nip17.Message(sender.SK, alice.Pub(), "for alice only")
		if err != nil {
			t.Fatal(err)
		}
		pub.MustAccept(wrap)
		note := sender.Event(1, now(), "public note")
		pub.MustAccept(note)

		wraps := nostr.Filter{Kinds: []int{nostr.KindGiftWrap}}
		forAlice := nostr.Filter{Kinds: []int{nostr.KindGiftWrap}, Tags: map[string][]string{"p": {alice.Pub()}}}
		byID := nostr.Filter{IDs: []string{wrap.ID}}
		mixed := nostr.Filter{Kinds: []int{1, nostr.KindGiftWrap}}
		everything := nostr.Filter{}

		// Before AUTH: asking for gift wraps only is auth-required; any
		// other read simply lacks them.
		anon := tr.dial(t)
		anon.SendRaw(nostr.AppendReq(nil, "w", wraps))
		anon.ExpectClosed("w", "auth-required:")
		if n := countOf(t, anon, "cw", forAlice); n != -1 {
			t.Fatalf("anonymous COUNT of gift wraps = %d, want CLOSED", n)
		}
		for name, f := range map[string]nostr.Filter{"by id": byID, "mixed kinds": mixed, "no kinds": everything} {
			if got := ids(anon.Req("a", f)); slices.Contains(got, wrap.ID) {
				t.Fatalf("anonymous %s read returned the gift wrap", name)
			}
		}
		eq(t, "anonymous COUNT of everything", countOf(t, anon, "c", everything), 1)

		// Bob, authenticated, is not the recipient: same as not existing.
		b := tr.dial(t)
		b.AuthAs(bob, tr.host)
		for name, f := range map[string]nostr.Filter{"kind": wraps, "#p alice": forAlice, "by id": byID, "mixed": mixed, "no kinds": everything} {
			if got := ids(b.Req("b", f)); slices.Contains(got, wrap.ID) {
				t.Fatalf("bob's %s read returned alice's gift wrap", name)
			}
		}
		eq(t, "bob COUNT of gift wraps", countOf(t, b, "c1", wraps), 0)
		eq(t, "bob COUNT of #p alice", countOf(t, b, "c2", forAlice), 0)
		eq(t, "bob COUNT of everything", countOf(t, b, "c3", everything), 1)
		eq(t, "bob COUNT of mixed", countOf(t, b, "c4", mixed), 1)

		// Alice reads, counts and opens it.
		a := tr.dial(t)
		a.AuthAs(alice, tr.host)
		for name, f := range map[string]nostr.Filter{"kind": wraps, "#p alice": forAlice, "by id": byID, "mixed": mixed, "no kinds": everything} {
			if got := ids(a.Req("r", f)); !slices.Contains(got, wrap.ID) {
				t.Fatalf("alice's %s read = %v, lacks her gift wrap", name, got)
			}
		}
		eq(t, "alice COUNT of gift wraps", countOf(t, a, "c1", wraps), 1)
		eq(t, "alice COUNT of everything", countOf(t, a, "c2", everything), 2)
		eq(t, "alice COUNT of mixed", countOf(t, a, "c3", mixed), 2)
		got := a.Req("o", byID)
		if len(got) != 1 {
			t.Fatalf("alice by id = %d events", len(got))
		}
		v, err := nostr.NewVerifier()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		rumor, err := nip59.Unwrap(got[0], alice.SK, v)
		if err != nil || rumor.Content != "for alice only" || rumor.PubKey != sender.Pub() {
			t.Fatalf("unwrap = %+v, %v", rumor, err)
		}

		// Live: a new wrap for alice reaches alice only. Bob and the
		// anonymous reader get the public marker sent after it, and
		// nothing before it.
		a.Subscribe("live", wraps, everything)
		b.Subscribe("live", everything, wraps)
		anon.Subscribe("live", everything)
		wrap2, err := nip17.Message(sender.SK, alice.Pub(), "second")
		if err != nil {
			t.Fatal(err)
		}
		pub.MustAccept(wrap2)
		marker := sender.Event(1, now(), "marker")
		pub.MustAccept(marker)
		eq(t, "alice's first live event", a.NextLive("live").ID, wrap2.ID)
		eq(t, "alice's second live event", a.NextLive("live").ID, marker.ID)
		eq(t, "bob's first live event", b.NextLive("live").ID, marker.ID)
		eq(t, "anonymous first live event", anon.NextLive("live").ID, marker.ID)
	})
}
