package main

import (
	"context"
	"net"
	"testing"

	"github.com/buzzrelay/buzz/examples/internal/wstest"
	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/nostr"
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

	ca, cb := wstest.Dial(t, a, nil), wstest.Dial(t, b, nil)
	if _, r := ca.Req("live", nostr.Filter{Kinds: []int{1}}); r != "" {
		t.Fatalf("REQ on a: %q", r)
	}
	sk, _ := nostr.GenerateSecretKey()
	ev := wstest.Event(t, sk, 1, "from process b")
	if ok := cb.Publish(ev); !ok.OK {
		t.Fatalf("publish on b: %q", ok.Message)
	}
	for {
		if m, ok := ca.Next().(*nostr.EventMessage); ok && m.SubID == "live" {
			if m.Event.ID != ev.ID {
				t.Fatalf("a delivered %s, want %s", m.Event.ID, ev.ID)
			}
			return
		}
	}
}
