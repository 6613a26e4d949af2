package pubsub

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

func newLocal(t *testing.T, opts ...LocalOption) *Local {
	t.Helper()
	b, err := NewLocal(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestNewLocalOptions(t *testing.T) {
	if b, err := NewLocal(WithLocalLogger(nil)); err == nil || b != nil {
		t.Fatal("nil logger accepted")
	}
	if b, err := NewLocal(nil); err == nil || b != nil {
		t.Fatal("nil option accepted")
	}
}

func TestLocalDeliversToEveryListener(t *testing.T) {
	b := newLocal(t)
	c := tenant.NewCommunityID()
	msg := Message{Community: c, Event: &nostr.Event{Kind: 1}, Raw: []byte(`{}`)}

	var got1, got2 []Message
	stop1 := b.Listen(func(m Message) { got1 = append(got1, m) })
	b.Listen(func(m Message) { got2 = append(got2, m) })
	if err := b.Publish(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	// Synchronous: delivered before Publish returns, exactly once each.
	if len(got1) != 1 || len(got2) != 1 || got1[0].Community != c || got1[0].Event != msg.Event {
		t.Fatalf("got %d and %d deliveries", len(got1), len(got2))
	}
	stop1()
	stop1() // idempotent
	if err := b.Publish(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if len(got1) != 1 || len(got2) != 2 {
		t.Fatalf("after stop: %d and %d deliveries", len(got1), len(got2))
	}
	if stop := b.Listen(nil); stop == nil {
		t.Fatal("Listen(nil) returned a nil stop")
	}
}

func TestLocalListenerMayUnsubscribeDuringDelivery(t *testing.T) {
	b := newLocal(t)
	var n atomic.Int64
	var stop func()
	stop = b.Listen(func(Message) { n.Add(1); stop() })
	b.Listen(func(Message) { n.Add(1) })
	for range 2 {
		if err := b.Publish(context.Background(), Message{}); err != nil {
			t.Fatal(err)
		}
	}
	if n.Load() != 3 {
		t.Fatalf("deliveries = %d, want 3", n.Load())
	}
}

func TestLocalRecoversListenerPanic(t *testing.T) {
	var logs bytes.Buffer
	b := newLocal(t, WithLocalLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	b.Listen(func(Message) { panic("boom") })
	got := 0
	b.Listen(func(Message) { got++ })
	if err := b.Publish(context.Background(), Message{}); err != nil {
		t.Fatal(err)
	}
	if got != 1 {
		t.Fatal("a panicking listener stopped delivery to the others")
	}
	if !strings.Contains(logs.String(), "listener panicked") {
		t.Fatalf("panic not logged: %q", logs.String())
	}
}

func TestLocalRetainRelease(t *testing.T) {
	b := newLocal(t)
	c := tenant.NewCommunityID()
	global, ch := Topic{Community: c}, Topic{Community: c, Channel: "general"}
	other := Topic{Community: tenant.NewCommunityID()}
	b.Retain(global)
	b.Retain(global)
	b.Retain(ch)
	if b.Retained(global) != 2 || b.Retained(ch) != 1 || b.Retained(other) != 0 {
		t.Fatalf("retained %d %d %d", b.Retained(global), b.Retained(ch), b.Retained(other))
	}
	b.Release(global)
	b.Release(ch)
	b.Release(ch) // over-release is a no-op
	b.Release(other)
	if b.Retained(global) != 1 || b.Retained(ch) != 0 || b.Retained(other) != 0 {
		t.Fatalf("after release %d %d %d", b.Retained(global), b.Retained(ch), b.Retained(other))
	}
	b.Retain(ch)
	if b.Retained(ch) != 1 {
		t.Fatal("retain after over-release")
	}
}

func TestLocalClose(t *testing.T) {
	b, err := NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	b.Listen(func(Message) { n++ })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := b.Publish(context.Background(), Message{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close = %v", err)
	}
	b.Listen(func(Message) { n++ })
	_ = b.Publish(context.Background(), Message{})
	if n != 0 {
		t.Fatalf("%d deliveries after Close", n)
	}
}

func TestLocalPublishCancelledContext(t *testing.T) {
	b := newLocal(t)
	n := 0
	b.Listen(func(Message) { n++ })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Publish(ctx, Message{}); !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("Publish with done ctx = %v, %d deliveries", err, n)
	}
}

// TestLocalConcurrent publishes, listens and unlistens from many goroutines
// (run with -race); a listener registered for the whole run sees every
// message exactly once.
func TestLocalConcurrent(t *testing.T) {
	b := newLocal(t)
	var steady atomic.Int64
	stop := b.Listen(func(Message) { steady.Add(1) })
	defer stop()
	const pubs, per = 4, 500
	var wg sync.WaitGroup
	for range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				if err := b.Publish(context.Background(), Message{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				s := b.Listen(func(Message) {})
				b.Retain(Topic{})
				b.Release(Topic{})
				s()
			}
		}()
	}
	wg.Wait()
	if steady.Load() != pubs*per {
		t.Fatalf("steady listener got %d, want %d", steady.Load(), pubs*per)
	}
	if b.Retained(Topic{}) != 0 {
		t.Fatal("retain count drifted")
	}
}
