package workflowhost

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// TestWorkflowHostRetries: triggers whose matching failed are delivered
// again by Subscribe, in order, until deliver succeeds; a failing deliver
// ends Subscribe (the engine's supervisor restarts it) without losing the
// event.
func TestWorkflowHostRetries(t *testing.T) {
	h := (*engineSide)(&Feature{wake: make(chan struct{}, 1)})
	h.h = quietHost{}
	c := tenant.CommunityID{}
	for _, id := range []string{"a", "b", "c"} {
		(*Feature)(h).enqueue(c, &nostr.Event{ID: id})
	}
	var mu sync.Mutex
	var got []string
	failOnce := map[string]bool{"b": true}
	deliver := func(_ context.Context, _ tenant.CommunityID, ev *nostr.Event) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev.ID)
		if failOnce[ev.ID] {
			failOnce[ev.ID] = false
			return errors.New("store down")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.Subscribe(ctx, deliver); err == nil || err.Error() != "store down" {
		t.Fatalf("first Subscribe = %v, want the delivery error", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Subscribe(ctx, deliver) }()
	(*Feature)(h).enqueue(c, &nostr.Event{ID: "d"}) // arrives while Subscribe waits
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 5 {
			break
		}
		runtime.Gosched()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Subscribe after cancel = %v", err)
	}
	want := []string{"a", "b", "b", "c", "d"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("deliveries %v, want %v", got, want)
		}
	}
	if len(h.retry) != 0 {
		t.Fatalf("%d left in the queue", len(h.retry))
	}
}

// TestWorkflowHostPublishOutlivesCancel: a status event published as its
// run's context is cancelled is still stored and delivered live.
func TestWorkflowHostPublishOutlivesCancel(t *testing.T) {
	st := relaytest.Embedded(t)
	tr := workflowRelay(t, st, newHookServer(t))
	owner := newSigner(t)
	c := tr.dial(t)
	ch := c.createChannel(owner, "x", channel.VisibilityOpen)
	c.Subscribe("s", nostr.Filter{Kinds: []int{46005}, Tags: map[string][]string{"h": {ch.String()}}, Limit: 0, LimitSet: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ev := &nostr.Event{Kind: 46005, CreatedAt: now(), Tags: nostr.Tags{{"h", ch.String()}}, Content: `{"status":"completed"}`}
	h := (*engineSide)(tr.wf)
	if err := h.Sign(ctx, tr.tc.Community(), ev); err != nil {
		t.Fatal(err)
	}
	if err := h.Publish(ctx, tr.tc.Community(), ev); err != nil {
		t.Fatalf("Publish with a cancelled context: %v", err)
	}
	relaytest.Eq(t, "delivered", c.NextLive("s").ID, ev.ID)
}
