package buzz

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

func presign(b *testing.B, n int) []*nostr.Event {
	signers := make([]*signer, 16)
	for i := range signers {
		signers[i] = newSigner(b)
	}
	evs := make([]*nostr.Event, n)
	base := now() - 3600
	for i := range evs {
		evs[i] = signers[i%len(signers)].event(1, base+int64(i%3600), fmt.Sprint("benchmark event ", i), nostr.Tag{"t", "bench"})
	}
	return evs
}

// BenchmarkIngest measures EVENT → OK over real WebSockets into store/sqlite,
// 8 connections per CPU, each waiting for its OK before the next EVENT.
func BenchmarkIngest(b *testing.B) {
	tr := newTestRelay(b)
	evs := presign(b, b.N)
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := tr.dial(b)
		for pb.Next() {
			ev := evs[next.Add(1)-1]
			c.sendEvent(ev)
			if ok := c.expectOK(ev.ID); !ok.OK {
				b.Errorf("refused: %s", ok.Message)
				return
			}
		}
	})
}

// BenchmarkReq measures one REQ (limit 100 of 1000 stored) → events → EOSE.
func BenchmarkReq(b *testing.B) {
	tr := newTestRelay(b)
	c := tr.dial(b)
	evs := presign(b, 1000)
	for _, ev := range evs {
		c.sendEvent(ev)
	}
	c.expectOKs(evs)
	f := nostr.Filter{Kinds: []int{1}, Tags: map[string][]string{"t": {"bench"}}, Limit: 100, LimitSet: true}
	b.ResetTimer()
	for i := range b.N {
		sub := fmt.Sprint("s", i%8)
		if got := c.req(sub, f); len(got) != 100 {
			b.Fatalf("got %d events", len(got))
		}
	}
}

// BenchmarkFanout measures one published event reaching 200 subscribers
// (each on its own connection): from sending the EVENT until the last
// subscriber has read it.
func BenchmarkFanout(b *testing.B) {
	const subscribers = 200
	tr := newTestRelay(b)
	var wg sync.WaitGroup
	for i := range subscribers {
		c := tr.dial(b)
		c.subscribe("live", nostr.Filter{Kinds: []int{1}})
		_ = c.ws.SetReadDeadline(time.Time{})
		go func(c *rawClient, i int) {
			for {
				_, raw, err := c.ws.ReadMessage()
				if err != nil {
					return
				}
				if strings.HasPrefix(string(raw), `["EVENT"`) {
					wg.Done()
				}
			}
		}(c, i)
	}
	pub := tr.dial(b)
	evs := presign(b, b.N)
	b.ResetTimer()
	for _, ev := range evs {
		wg.Add(subscribers)
		pub.sendEvent(ev)
		wg.Wait()
		pub.expectOK(ev.ID)
	}
}
