package buzz

import (
	"context"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/nostr"
)

// TestGoNostrHappyPath drives the relay with an independent client library:
// publish, subscribe, stored events, EOSE, live delivery, CLOSE, COUNT.
func TestGoNostrHappyPath(t *testing.T) {
	tr := newTestRelay(t)
	tr.leak = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	rl, err := gonostr.RelayConnect(context.Background(), tr.url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	// No rl.Close(): see testRelay.leak.

	sk := gonostr.GeneratePrivateKey()
	pk, _ := gonostr.GetPublicKey(sk)
	base := gonostr.Now() - 100
	var stored []gonostr.Event
	for i := range 3 {
		ev := gonostr.Event{Kind: 1, CreatedAt: base + gonostr.Timestamp(i), Content: "hello " + string(rune('a'+i)), Tags: gonostr.Tags{}}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		if err := rl.Publish(ctx, ev); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		stored = append(stored, ev)
	}

	sub, err := rl.Subscribe(ctx, gonostr.Filters{{Authors: []string{pk}, Kinds: []int{1}}})
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	var got []*gonostr.Event
	func() {
		for {
			select {
			case ev := <-sub.Events:
				got = append(got, ev)
			case <-sub.EndOfStoredEvents:
				return
			case <-ctx.Done():
				t.Fatal("no EOSE")
			}
		}
	}()
	// go-nostr hands each event to its channel from a goroutine of its own,
	// so events may trail EOSE and arrive in any order: collect them, then
	// compare as a set (the relay's order is pinned by the raw-frame tests).
	for len(got) < len(stored) {
		select {
		case ev := <-sub.Events:
			got = append(got, ev)
		case <-time.After(5 * time.Second):
			t.Fatalf("got %d stored events, want %d", len(got), len(stored))
		}
	}
	want := map[string]string{}
	for _, ev := range stored {
		want[ev.ID] = ev.Content
	}
	for _, ev := range got {
		content, ok := want[ev.ID]
		if !ok || ev.Content != content {
			t.Fatalf("unexpected stored event %s %q", ev.ID, ev.Content)
		}
		delete(want, ev.ID)
	}

	// Live delivery after EOSE, from another connection.
	rl2, err := gonostr.RelayConnect(context.Background(), tr.url)
	if err != nil {
		t.Fatal(err)
	}
	live := gonostr.Event{Kind: 1, CreatedAt: gonostr.Now(), Content: "live", Tags: gonostr.Tags{{"t", "x"}}}
	if err := live.Sign(sk); err != nil {
		t.Fatal(err)
	}
	if err := rl2.Publish(ctx, live); err != nil {
		t.Fatalf("publish live: %v", err)
	}
	select {
	case ev := <-sub.Events:
		if ev.ID != live.ID {
			t.Fatalf("live event %s, want %s", ev.ID, live.ID)
		}
	case <-ctx.Done():
		t.Fatal("live event not delivered")
	}

	// COUNT (go-nostr sends a single filter; several are tested raw).
	n, _, err := rl.Count(ctx, gonostr.Filters{{Authors: []string{pk}}})
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	if n != 4 {
		t.Fatalf("count = %d, want 4", n)
	}

	// CLOSE ends the subscription for the client: go-nostr drops it and
	// closes its channel. That the relay stops delivering after a CLOSE is
	// TestReqReplaceAndClose's, over raw frames with a barrier.
	sub.Unsub()
	select {
	case ev, ok := <-sub.Events:
		if ok {
			t.Fatalf("event %s delivered after CLOSE", ev.ID)
		}
	case <-ctx.Done():
		t.Fatal("the subscription's channel is still open after CLOSE")
	}
}

func TestGoNostrAuth(t *testing.T) {
	tr := newTestRelay(t, WithAuth(AuthRequired))
	tr.leak = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rl, err := gonostr.RelayConnect(context.Background(), tr.url)
	if err != nil {
		t.Fatal(err)
	}
	sk := gonostr.GeneratePrivateKey()
	ev := gonostr.Event{Kind: 1, CreatedAt: gonostr.Now(), Content: "x", Tags: gonostr.Tags{}}
	_ = ev.Sign(sk)
	err = rl.Publish(ctx, ev)
	if err == nil {
		t.Fatal("publish before AUTH accepted")
	}
	mustPrefix(t, "error", err.Error(), "msg: auth-required:")
	if err := rl.Auth(ctx, func(e *gonostr.Event) error { return e.Sign(sk) }); err != nil {
		t.Fatalf("auth: %v", err)
	}
	if err := rl.Publish(ctx, ev); err != nil {
		t.Fatalf("publish after AUTH: %v", err)
	}
	// Another author's event is refused even when authenticated.
	other := gonostr.Event{Kind: 1, CreatedAt: gonostr.Now(), Content: "y", Tags: gonostr.Tags{}}
	_ = other.Sign(gonostr.GeneratePrivateKey())
	err = rl.Publish(ctx, other)
	if err == nil {
		t.Fatal("event of an unauthenticated author accepted")
	}
	mustPrefix(t, "error", err.Error(), "msg: restricted:")
}

func TestEventOKPaths(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)

	ev := s.Event(1, now(), "hello")
	ok := c.Publish(ev)
	eq(t, "accepted", ok.OK, true)
	eq(t, "accepted message", ok.Message, "")

	ok = c.Publish(ev)
	eq(t, "duplicate ok", ok.OK, true)
	mustPrefix(t, "duplicate", ok.Message, "duplicate:")

	bad := s.Event(1, now(), "x")
	bad.Content = "tampered"
	ok = c.Publish(bad)
	eq(t, "invalid id ok", ok.OK, false)
	mustPrefix(t, "invalid id", ok.Message, "invalid:")

	badSig := s.Event(1, now(), "y")
	sig := []byte(badSig.Sig)
	sig[10] ^= 1
	if sig[10] > 'f' || (sig[10] > '9' && sig[10] < 'a') {
		sig[10] = '0'
	}
	badSig.Sig = string(sig)
	ok = c.Publish(badSig)
	eq(t, "bad sig ok", ok.OK, false)
	mustPrefix(t, "bad sig", ok.Message, "invalid:")

	future := s.Event(1, now()+16*60, "future")
	ok = c.Publish(future)
	eq(t, "future ok", ok.OK, false)
	eq(t, "future message", ok.Message, "invalid: created_at too far in the future")

	nearFuture := s.Event(1, now()+14*60, "near future")
	c.MustAccept(nearFuture)

	expired := s.Event(1, now(), "expired", nostr.Tag{"expiration", "1000"})
	ok = c.Publish(expired)
	eq(t, "expired ok", ok.OK, false)
	eq(t, "expired message", ok.Message, "invalid: event has expired")

	big := make([]byte, 256<<10+1)
	for i := range big {
		big[i] = 'a'
	}
	tooBig := s.Event(1, now(), string(big))
	ok = c.Publish(tooBig)
	eq(t, "oversized ok", ok.OK, false)
	mustPrefix(t, "oversized", ok.Message, "invalid: content too long")

	auth := s.Event(nostr.KindClientAuth, now(), "", nostr.Tag{"challenge", c.Challenge}, nostr.Tag{"relay", tr.url})
	ok = c.Publish(auth)
	eq(t, "22242 ok", ok.OK, false)
	eq(t, "22242 message", ok.Message, "invalid: AUTH events are not accepted as EVENT")

	// Nothing refused was stored.
	got := c.Req("all", nostr.Filter{})
	if len(got) != 2 {
		t.Fatalf("stored %v, want only the accepted and near-future events", ids(got))
	}
}
