package main

import (
	"context"
	"net"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

// TestTwoProcesses runs two processes of the example over one database and
// one Redis namespace: an event published on one reaches a subscriber on
// the other, live.
func TestTwoProcesses(t *testing.T) {
	cfg := config{
		databaseURL: pgtest.NewDatabase(t),
		redisURL:    "redis://" + testenv.NeedRedis(t),
		namespace:   testenv.RandomName("example-cluster"),
		community:   "relay.example",
	}
	start := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, ln, cfg) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
		return "ws://" + ln.Addr().String()
	}
	a, b := start(), start()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ra, err := gonostr.RelayConnect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := gonostr.RelayConnect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()

	sub, err := ra.Subscribe(ctx, gonostr.Filters{{Kinds: []int{1}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.EndOfStoredEvents:
	case <-ctx.Done():
		t.Fatal("no EOSE")
	}
	sk := gonostr.GeneratePrivateKey()
	ev := gonostr.Event{Kind: 1, CreatedAt: gonostr.Now(), Content: "from process b"}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	if err := rb.Publish(ctx, ev); err != nil {
		t.Fatalf("publish on b: %v", err)
	}
	select {
	case got := <-sub.Events:
		if got.ID != ev.ID {
			t.Fatalf("a delivered %s, want %s", got.ID, ev.ID)
		}
	case <-ctx.Done():
		t.Fatal("the event published on b never reached a subscriber on a")
	}
}
