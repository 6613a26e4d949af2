package buzz

import (
	"context"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/fakeclock"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// TestCommunityKindAllowList: a community's own kind allow-list setting
// applies to it alone, over the relay's list (WithKindAllowList): the same
// event is refused with Buzz's "restricted: unknown event kind" in a
// community that turned the Buzz list on, and accepted in one that left it
// off; a community left at the default follows the relay's list. A change
// holds within seconds, by the relay's clock.
func TestCommunityKindAllowList(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		ks, ok := st.(store.CommunityKindsStore)
		if !ok {
			t.Fatal("the backend keeps no kind allow-list settings")
		}
		ctx := context.Background()
		clk := fakeclock.New(time.Now())
		set := func(tr *testRelay, kinds string) {
			t.Helper()
			tc, err := tenant.Bind(ctx, st, tr.host)
			if err != nil {
				t.Fatal(err)
			}
			if err := ks.SetCommunityKinds(ctx, tc.Community(), kinds); err != nil {
				t.Fatal(err)
			}
		}
		s := newSigner(t)
		const unknown = 1111 // not a kind Buzz accepts
		ev := s.Event(unknown, now(), "a comment")

		// The relay's list is off: A turns Buzz's on, B leaves it.
		a, b := leakedRelay(t, st, WithClock(clk.Now)), leakedRelay(t, st, WithClock(clk.Now))
		set(a, "buzz")
		eq(t, "unknown kind in A", a.dial(t).Publish(ev).Message, messaging.MsgUnknownKind)
		b.dial(t).MustAccept(ev)
		a.dial(t).MustAccept(s.Event(1, now(), "a note")) // a Buzz kind

		// The relay's list is on: C follows it, D turned it off.
		opt := WithKindAllowList(messaging.BuzzKinds())
		c, d := leakedRelay(t, st, WithClock(clk.Now), opt), leakedRelay(t, st, WithClock(clk.Now), opt)
		set(d, "off")
		eq(t, "unknown kind in C (the relay's list)", c.dial(t).Publish(ev).Message, messaging.MsgUnknownKind)
		d.dial(t).MustAccept(ev)

		// A change holds once the cached setting expires.
		set(a, "")
		clk.Advance(2 * time.Second)
		a.dial(t).MustAccept(ev)
		set(c, "buzz,1111")
		clk.Advance(2 * time.Second)
		c.dial(t).MustAccept(ev)
	})
}
