package buzz

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
)

// BenchmarkLiveAllowed measures the per-recipient access check of live
// fan-out: a community-wide event, and a channel event checked against a
// cached readable set of 100 open channels.
func BenchmarkLiveAllowed(b *testing.B) {
	ctx := context.Background()
	st, err := embedded.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cid := storetest.Community(b, st, "bench.example")
	owner := storetest.NewAuthor(b)
	ids := make([]channel.ID, 100)
	for i := range ids {
		ids[i] = storetest.CreateChannel(b, st, cid, owner, "c", channel.VisibilityOpen)
	}
	access, err := channel.NewAccess(st)
	if err != nil {
		b.Fatal(err)
	}
	defer access.Close()
	c := &conn{reader: access.Reader(ctx, cid)}
	if _, err := c.reader.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	s := newSigner(b)
	global := s.Event(1, now(), "hello", nostr.Tag{"t", "x"}, nostr.Tag{"p", s.Pub()})
	inChannel := s.Event(9, now(), "hello", nostr.Tag{"t", "x"}, chanTag(ids[57]))
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
