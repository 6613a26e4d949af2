package buzz

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// probeFeature mounts a route, a policy, a hook and a NIP through the seam.
type probeFeature struct {
	h      Host
	stored chan string
	fail   error
}

func (f *probeFeature) Mount(h Host) error {
	if f.fail != nil {
		return f.fail
	}
	f.h = h
	h.HandleCommunity("GET /probe", func(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
		_, _ = w.Write([]byte("probe of " + tc.Host()))
	})
	h.AddEventPolicy(func(_ context.Context, _ tenant.TenantContext, ev *nostr.Event) error {
		if ev.Content == "forbidden by the feature" {
			return errors.New("restricted: the probe feature refuses it")
		}
		return nil
	})
	h.AddOnStored(func(_ context.Context, _ tenant.TenantContext, ev *nostr.Event) {
		select {
		case f.stored <- ev.ID:
		default:
		}
	})
	h.Advertise(nip11.NIP{Number: 99, Title: "Probe"})
	return nil
}

// TestFeatureSeam: a feature's route, policy, hook and NIP take effect,
// its mounting methods are closed once New returned, and a failing Mount
// fails New.
func TestFeatureSeam(t *testing.T) {
	f := &probeFeature{stored: make(chan string, 1)}
	tr := newTestRelay(t, WithFeature(f))
	eq(t, "route", tr.routeAnswers(t, "GET", "/probe"), true)
	if !slices.ContainsFunc(tr.relay.NIPs(), func(n nip11.NIP) bool { return n.Number == 99 }) {
		t.Fatal("the advertised NIP is not listed")
	}
	c, s := tr.dial(t), newSigner(t)
	eq(t, "policy", c.Publish(s.Event(nostr.KindNote, now(), "forbidden by the feature")).Message, "restricted: the probe feature refuses it")
	ev := s.Event(nostr.KindNote, now(), "fine")
	c.MustAccept(ev)
	eq(t, "hook", <-f.stored, ev.ID)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "outside Feature.Mount") {
			t.Fatalf("a route added after New: recovered %v", r)
		}
	}()
	f.h.HandleCommunity("GET /late", nil)
}

func TestFeatureMountErrors(t *testing.T) {
	st := newTestRelay(t).store
	if _, err := New(WithStore(st), WithDirectory(st), WithFeature(nil)); err == nil {
		t.Fatal("nil feature accepted")
	}
	want := errors.New("probe: cannot mount")
	if _, err := New(WithStore(st), WithDirectory(st), WithFeature(&probeFeature{fail: want})); !errors.Is(err, want) {
		t.Fatalf("New = %v, want the feature's error", err)
	}
}
