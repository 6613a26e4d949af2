package ingest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

// gatedStore is the embedded store with the durability of each staged save
// held until the test lets it through: waiting receives a value when the
// pipeline waits for it, and the wait ends with what release gives (the
// store's own answer for nil).
type gatedStore struct {
	*embedded.Store
	waiting chan struct{}
	release chan error
}

func (g *gatedStore) SaveStaged(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) (func() error, error) {
	durable, err := g.Store.SaveStaged(ctx, c, ev)
	if durable == nil {
		return nil, err
	}
	return func() error {
		g.waiting <- struct{}{}
		if err := <-g.release; err != nil {
			return err
		}
		return durable()
	}, err
}

type stagedEnv struct {
	p    *ingest.Pipeline
	st   *gatedStore
	tc   tenant.TenantContext
	live chan string // ids published to the broker
}

func newStagedEnv(t *testing.T) *stagedEnv {
	t.Helper()
	parts := newPipelineParts(t, "a.test")
	e := &stagedEnv{st: &gatedStore{Store: parts.st, waiting: make(chan struct{}), release: make(chan error)},
		tc: parts.tcs[0], live: make(chan string, 8)}
	t.Cleanup(parts.br.Listen(func(m pubsub.Message) { e.live <- m.Event.ID }))
	var err error
	if e.p, err = ingest.New(parts.config(ingest.Config{Store: e.st})); err != nil {
		t.Fatal(err)
	}
	return e
}

// ingest runs the pipeline on ev in the background; the outcome arrives on
// the returned channel.
func (e *stagedEnv) ingest(ev *nostr.Event) <-chan ingest.Outcome {
	out := make(chan ingest.Outcome, 1)
	go func() { out <- e.p.Ingest(context.Background(), ingest.Submission{Tenant: e.tc, Event: ev}) }()
	return out
}

// With a store that stages its saves, a new event is published live as
// soon as it is applied, before it is durable, and its outcome comes only
// once it is durable; a refusal decided on stored state (a duplicate)
// waits for that state to be durable too; and when durability fails the
// outcome is an internal error, never OK.
func TestStagedSaveOutcomeWaitsForDurability(t *testing.T) {
	e := newStagedEnv(t)
	sk := newSK(t)
	ev := signedEvent(t, sk, 1, "staged")

	out := e.ingest(ev)
	if got := recv(t, e.live, "live event"); got != ev.ID {
		t.Fatalf("published %s, want %s", got, ev.ID)
	}
	recv(t, e.st.waiting, "wait for durability")
	select {
	case o := <-out:
		t.Fatalf("outcome %+v before the save was durable", o)
	default:
	}
	n, err := e.st.Count(context.Background(), e.tc.Community(), []nostr.Filter{{IDs: []string{ev.ID}}})
	if err != nil || n != 1 {
		t.Fatalf("count while the save is not yet durable = %d, %v; want 1 (applied)", n, err)
	}
	send(t, e.st.release, nil)
	if o := recv(t, out, "outcome"); !o.OK || !o.Stored {
		t.Fatalf("outcome %+v, want stored", o)
	}

	// The same event again: a duplicate, acknowledged once durable.
	out = e.ingest(ev)
	recv(t, e.st.waiting, "wait for durability")
	select {
	case o := <-out:
		t.Fatalf("duplicate's outcome %+v before durability", o)
	default:
	}
	send(t, e.st.release, nil)
	if o := recv(t, out, "outcome"); !o.OK || o.Stored || o.Message != ingest.MsgDuplicate {
		t.Fatalf("outcome of the repeat %+v, want duplicate", o)
	}

	// Durability fails: no OK.
	ev2 := signedEvent(t, sk, 1, "staged, then the disk fails")
	out = e.ingest(ev2)
	recv(t, e.live, "live event")
	recv(t, e.st.waiting, "wait for durability")
	send(t, e.st.release, errors.New("disk on fire"))
	if o := recv(t, out, "outcome"); o.OK || o.Message != ingest.MsgInternal {
		t.Fatalf("outcome %+v after a failed sync, want %q", o, ingest.MsgInternal)
	}
	select {
	case id := <-e.live:
		t.Fatalf("published %s once more", id)
	default:
	}
}

// recv receives from ch, failing the test if nothing comes: the pipeline
// is stuck where it should not wait.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// send sends v on ch, failing the test if nobody takes it.
func send[T any](t *testing.T, ch chan<- T, v T) {
	t.Helper()
	select {
	case ch <- v:
	case <-time.After(10 * time.Second):
		t.Fatal("nobody waits for durability")
	}
}
