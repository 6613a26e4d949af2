package buzz

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// BenchmarkLiveAllowed measures the per-recipient access check of live
// fan-out: a community-wide event, and a channel event checked against a
// cached readable set of 100 channels.
func BenchmarkLiveAllowed(b *testing.B) {
	ids := make([]channel.ID, 100)
	for i := range ids {
		ids[i] = storetest.NewChannelID()
	}
	gen := new(atomic.Uint64)
	c := &conn{r: &Relay{channels: &relayChannels{gens: map[tenant.CommunityID]*atomic.Uint64{}}}}
	c.access = connAccess{valid: true, scope: channel.ScopeOf(ids...), at: time.Now().Add(time.Hour), gen0: gen}
	s := newSigner(b)
	global := s.event(1, now(), "hello", nostr.Tag{"t", "x"}, nostr.Tag{"p", s.pub()})
	inChannel := s.event(9, now(), "hello", nostr.Tag{"t", "x"}, chanTag(ids[57]))
	for _, bc := range []struct {
		name string
		ev   *nostr.Event
	}{{"global", global}, {"channel", inChannel}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !c.liveAllowed(bc.ev) {
					b.Fatal("refused")
				}
			}
		})
	}
}
