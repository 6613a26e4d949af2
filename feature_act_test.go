package buzz

import (
	"context"
	"errors"
	"testing"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
)

// actingFeature acts as the relay through the seam: a command, a
// readiness check, background work and relay-signed publishing.
type actingFeature struct {
	h        Host
	notReady error
	started  chan struct{}
	stopped  chan struct{}
}

// kindProbeCommand is the kind the acting feature executes.
const kindProbeCommand = 4242

func (f *actingFeature) Mount(h Host) error {
	f.h = h
	h.AddCommand(kindProbeCommand, func(_ context.Context, s ingest.Submission) (ingest.Outcome, bool) {
		if s.Event.Content == "refuse" {
			return ingest.Outcome{Message: "blocked: the probe command refuses it"}, false
		}
		return ingest.Outcome{OK: true, Message: "response:done"}, false
	})
	h.AddReadyCheck("probe", func(context.Context) error { return f.notReady })
	h.Go(func(ctx context.Context) {
		close(f.started)
		<-ctx.Done()
		close(f.stopped)
	})
	return nil
}

// TestFeatureActsThroughSeam: a feature's command executes an event kind
// without storing it, its readiness check is part of Ready, its
// background work runs from New until Shutdown (which stops it first),
// and what it publishes as the relay is signed with the community's key,
// stored and delivered live.
func TestFeatureActsThroughSeam(t *testing.T) {
	f := &actingFeature{notReady: errors.New("probe down"), started: make(chan struct{}), stopped: make(chan struct{})}
	tr := newTestRelay(t, WithFeature(f), WithRelayKey(testMaster))
	<-f.started

	c, s := tr.dial(t), newSigner(t)
	c.AuthAs(s, tr.host)
	cmd := s.Event(kindProbeCommand, now(), "run")
	ok := c.Publish(cmd)
	eq(t, "command OK", ok.OK, true)
	eq(t, "command message", ok.Message, "response:done")
	eq(t, "refused command", c.Publish(s.Event(kindProbeCommand, now(), "refuse")).Message, "blocked: the probe command refuses it")
	eq(t, "commands are not stored", len(c.Req("cmd", nostr.Filter{Kinds: []int{kindProbeCommand}})), 0)

	var nr *NotReadyError
	if err := tr.relay.Ready(context.Background()); !errors.As(err, &nr) || nr.Dependency != "probe" || nr.State != "unavailable" {
		t.Fatalf("Ready with a failing feature check = %v", err)
	}
	f.notReady = nil // read again only by the next Ready
	if err := tr.relay.Ready(context.Background()); err != nil {
		t.Fatalf("Ready = %v", err)
	}

	c.Subscribe("live", nostr.Filter{Kinds: []int{nostr.KindNote}, Limit: 0, LimitSet: true})
	ev := &nostr.Event{Kind: nostr.KindNote, CreatedAt: now(), Tags: nostr.Tags{}, Content: "from the relay"}
	if err := f.h.Sign(tr.tc.Community(), ev); err != nil {
		t.Fatal(err)
	}
	eq(t, "signer", ev.PubKey, tr.relay.keys.For(tr.tc.Community()).PublicKey())
	if err := f.h.Publish(context.Background(), tr.tc.Community(), ev); err != nil {
		t.Fatal(err)
	}
	eq(t, "delivered live", c.NextLive("live").ID, ev.ID)
	if err := f.h.Publish(context.Background(), tr.tc.Community(), ev); err != nil {
		t.Fatalf("publishing a stored event again: %v", err)
	}

	select {
	case <-f.stopped:
		t.Fatal("background work stopped before Shutdown")
	default:
	}
	if err := tr.relay.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-f.stopped
}
