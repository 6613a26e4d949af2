package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/examples/internal/wstest"
	"github.com/buzzrelay/buzz/nostr"
)

func TestPolicies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, t.TempDir()) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	url := "ws://" + ln.Addr().String()

	type user struct {
		sk nostr.SecretKey
		c  *wstest.Client
	}
	connect := func() user {
		sk, _ := nostr.GenerateSecretKey()
		return user{sk, wstest.Dial(t, url, nil)}
	}
	auth := func(u user) {
		if ok := u.c.Auth(u.sk); !ok.OK {
			t.Fatalf("AUTH: %q", ok.Message)
		}
	}
	alice, bob, eve := connect(), connect(), connect()
	dm := wstest.Event(t, alice.sk, 4, "(ciphertext)", nostr.Tag{"p", bob.sk.PublicKey()})

	// The write rule: not before authenticating as the author.
	if ok := alice.c.Publish(dm); ok.OK || !strings.HasPrefix(ok.Message, "auth-required:") {
		t.Fatalf("unauthenticated publish: %v %q", ok.OK, ok.Message)
	}
	auth(alice)
	if ok := alice.c.Publish(dm); !ok.OK {
		t.Fatalf("authenticated publish: %q", ok.Message)
	}

	// The read rule: a third party is refused, the recipient reads it.
	dms := nostr.Filter{Kinds: []int{4}, Tags: map[string][]string{"p": {bob.sk.PublicKey()}}}
	if _, r := eve.c.Req("a", dms); !strings.HasPrefix(r, "auth-required:") {
		t.Fatalf("unauthenticated third party: %q", r)
	}
	auth(eve)
	if _, r := eve.c.Req("b", dms); !strings.HasPrefix(r, "restricted:") {
		t.Fatalf("authenticated third party: %q", r)
	}
	if _, r := eve.c.Req("c", nostr.Filter{}); !strings.HasPrefix(r, "restricted:") {
		t.Fatalf("a filter matching every kind: %q", r)
	}
	if _, r := eve.c.Req("d", nostr.Filter{Kinds: []int{1}}); r != "" {
		t.Fatalf("kind 1 read refused: %q", r)
	}
	auth(bob)
	got, r := bob.c.Req("e", dms)
	if r != "" || len(got) != 1 || got[0].ID != dm.ID {
		t.Fatalf("recipient's read: %q %v", r, got)
	}
}
