package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"
)

func TestPolicies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(rctx, ln, t.TempDir()) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	url := "ws://" + ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	type user struct {
		sk, pk string
		rl     *gonostr.Relay
	}
	connect := func() user {
		rl, err := gonostr.RelayConnect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rl.Close() })
		sk := gonostr.GeneratePrivateKey()
		pk, _ := gonostr.GetPublicKey(sk)
		return user{sk, pk, rl}
	}
	auth := func(u user) {
		// Called after a first round trip: the relay's challenge, its first
		// message, has arrived.
		if err := u.rl.Auth(ctx, func(ev *gonostr.Event) error { return ev.Sign(u.sk) }); err != nil {
			t.Fatalf("AUTH: %v", err)
		}
	}
	alice, bob, eve := connect(), connect(), connect()
	dm := gonostr.Event{Kind: 4, CreatedAt: gonostr.Now(), Content: "(ciphertext)", Tags: gonostr.Tags{{"p", bob.pk}}}
	if err := dm.Sign(alice.sk); err != nil {
		t.Fatal(err)
	}

	// The write rule: not before authenticating as the author.
	if err := alice.rl.Publish(ctx, dm); err == nil || !strings.Contains(err.Error(), "auth-required:") {
		t.Fatalf("unauthenticated publish: %v", err)
	}
	auth(alice)
	if err := alice.rl.Publish(ctx, dm); err != nil {
		t.Fatalf("authenticated publish: %v", err)
	}

	// The read rule: a third party is refused, the recipient reads it.
	closed := func(u user, f gonostr.Filter) string {
		sub, err := u.rl.Subscribe(ctx, gonostr.Filters{f})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsub()
		select {
		case reason := <-sub.ClosedReason:
			return reason
		case <-sub.EndOfStoredEvents:
			return ""
		case <-ctx.Done():
			t.Fatal("no answer")
			return ""
		}
	}
	dms := gonostr.Filter{Kinds: []int{4}, Tags: gonostr.TagMap{"p": {bob.pk}}}
	if r := closed(eve, dms); !strings.HasPrefix(r, "auth-required:") {
		t.Fatalf("unauthenticated third party: %q", r)
	}
	auth(eve)
	if r := closed(eve, dms); !strings.HasPrefix(r, "restricted:") {
		t.Fatalf("authenticated third party: %q", r)
	}
	if r := closed(eve, gonostr.Filter{}); !strings.HasPrefix(r, "restricted:") {
		t.Fatalf("a filter matching every kind: %q", r)
	}
	if r := closed(bob, gonostr.Filter{Kinds: []int{1}}); r != "" {
		t.Fatalf("kind 1 read refused: %q", r)
	}
	auth(bob)
	got, err := bob.rl.QuerySync(ctx, dms)
	if err != nil || len(got) != 1 || got[0].ID != dm.ID {
		t.Fatalf("recipient's read: %v %v", err, got)
	}
}
