package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/tenant"
)

// fakeEvent returns a structurally valid event with random id and signature:
// receiving pods parse but do not verify, so benchmarks need not sign.
func fakeEvent(content string) *nostr.Event {
	var id [32]byte
	var sig [64]byte
	_, _ = rand.Read(id[:])
	_, _ = rand.Read(sig[:])
	return &nostr.Event{
		ID: hex.EncodeToString(id[:]), PubKey: hex.EncodeToString(id[:]), CreatedAt: time.Now().Unix(),
		Kind: 9, Tags: nostr.Tags{{"h", "bench"}}, Content: content, Sig: hex.EncodeToString(sig[:]),
	}
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// BenchmarkCrossPodLatency publishes on pod A and waits for pod B's delivery,
// one event at a time: publish→deliver latency across two brokers on one
// Redis. Reports p50/p99 and Redis messages per event (1 PUBLISH + one
// delivery per subscribed pod, from PUBSUB NUMSUB).
func BenchmarkCrossPodLatency(b *testing.B) {
	needRedis(b)
	ns := randomName("b")
	comm := tenant.NewCommunityID()
	a, p := newPod(b, ns), newPod(b, ns)
	topic := pubsub.Topic{Community: comm, Channel: "bench"}
	a.Retain(topic)
	p.Retain(topic)
	got := make(chan time.Time, 1)
	p.Listen(func(pubsub.Message) { got <- time.Now() })
	msgs := make([]pubsub.Message, b.N)
	for i := range msgs {
		msgs[i] = msgOf(comm, fakeEvent("hello bench"))
	}
	lat := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := a.Publish(ctx, msgs[i]); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-got:
			lat = append(lat, at.Sub(start))
		case <-time.After(5 * time.Second):
			b.Fatal("delivery timed out")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(quantile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(quantile(lat, 0.99).Microseconds()), "p99-µs")
	rc := rawClient(b)
	ch := a.topicChannel(topic)
	res, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(ch).Build()).ToArray()
	if err == nil && len(res) == 2 {
		n, _ := res[1].AsInt64()
		b.ReportMetric(float64(1+n), "redis-msgs/event")
	}
}

// BenchmarkCrossPodThroughput publishes from several goroutines on pod A
// and completes when pod B has received every event; reports events/s.
func BenchmarkCrossPodThroughput(b *testing.B) {
	needRedis(b)
	ns := randomName("b")
	comm := tenant.NewCommunityID()
	a, p := newPod(b, ns), newPod(b, ns)
	topic := pubsub.Topic{Community: comm, Channel: "bench"}
	a.Retain(topic)
	p.Retain(topic)
	next := make(chan pubsub.Message, b.N)
	for range b.N {
		next <- msgOf(comm, fakeEvent("hello bench"))
	}
	close(next)
	received := make(chan struct{}, b.N)
	p.Listen(func(pubsub.Message) { received <- struct{}{} })
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := a.Publish(ctx, <-next); err != nil {
				b.Error(err)
				return
			}
		}
	})
	timeout := time.After(30 * time.Second)
	for range b.N {
		select {
		case <-received:
		case <-timeout:
			b.Fatal("deliveries timed out")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkReceive measures the receiving side without the network: envelope
// check, echo-mark lookup, event parse and delivery to one listener.
func BenchmarkReceive(b *testing.B) {
	needRedis(b)
	a := newPod(b, randomName("b"))
	comm := tenant.NewCommunityID()
	topic := pubsub.Topic{Community: comm, Channel: "bench"}
	a.Retain(topic)
	ev := fakeEvent("a typical short chat message of some length")
	m := rueidis.PubSubMessage{
		Channel: a.topicChannel(topic),
		Message: string(appendEnvelope(nil, comm, ev.ID, ev.AppendJSON(nil))),
	}
	b.ReportAllocs()
	for b.Loop() {
		a.onMessage(m)
	}
}
