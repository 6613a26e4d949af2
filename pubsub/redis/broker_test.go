package redis

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/testenv"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/tenant"
)

// barrier publishes a sentinel event of community comm straight to the
// Redis channel and waits until each of pods has it. A pod reads all its
// channels on one connection, in the order Redis handled the PUBLISHes,
// and delivers in that order: once the sentinel is in, whatever Redis
// handled before it (a duplicate, an echo, a stray message) has been
// delivered or dropped, so counts can be asserted. The sentinel is counted
// as a delivery.
func barrier(t *testing.T, channel string, comm tenant.CommunityID, pods ...*pod) {
	t.Helper()
	rc := rawClient(t)
	ev := newEvent(t, 1, "", "sentinel")
	env := string(appendEnvelope(nil, comm, ev.ID, ev.AppendJSON(nil)))
	if err := rc.Do(context.Background(), rc.B().Publish().Channel(channel).Message(env).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		eventually(t, "the sentinel", func() bool { return p.got.count(comm, ev.ID) == 1 })
	}
}

// timers runs a pod's debounced unsubscribes (withAfterFunc) when the test
// says the delay has passed.
type timers struct {
	mu  sync.Mutex
	due []*fakeTimer
}

type fakeTimer struct {
	f       func()
	stopped atomic.Bool
}

func (t *fakeTimer) Stop() bool { return !t.stopped.Swap(true) }

func (ts *timers) afterFunc(_ time.Duration, f func()) stopper {
	t := &fakeTimer{f: f}
	ts.mu.Lock()
	ts.due = append(ts.due, t)
	ts.mu.Unlock()
	return t
}

// elapse runs every scheduled call not stopped, as the delay passing would.
func (ts *timers) elapse() {
	ts.mu.Lock()
	due := ts.due
	ts.due = nil
	ts.mu.Unlock()
	for _, t := range due {
		if t.Stop() {
			t.f()
		}
	}
}

func TestTwoPodsDeliverEveryEventExactlyOnce(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	comm := tenant.NewCommunityID()
	a, b := newPod(t, ns), newPod(t, ns)
	global := pubsub.Topic{Community: comm}
	chanTopic := pubsub.Topic{Community: comm, Channel: "c1"}
	for _, p := range []*pod{a, b} {
		p.Retain(global)
		p.Retain(chanTopic)
		if !p.Subscribed(global) || !p.Subscribed(chanTopic) {
			t.Fatal("Retain returned before the subscription was confirmed")
		}
	}

	const perPod = 40
	var events []*nostr.Event
	ctx := context.Background()
	for i := 0; i < perPod; i++ {
		for j, p := range []*pod{a, b} {
			channel := ""
			if i%2 == 0 {
				channel = "c1"
			}
			ev := newEvent(t, 9, channel, fmt.Sprintf("pod %d event %d", j, i))
			if i%5 == 0 {
				ev = newEvent(t, 20001, channel, fmt.Sprintf("online %d %d", j, i)) // ephemeral crosses pods too
			}
			events = append(events, ev)
			if err := p.Publish(ctx, msgOf(comm, ev)); err != nil {
				t.Fatalf("Publish: %v", err)
			}
		}
	}
	a.got.waitTotal(t, len(events))
	b.got.waitTotal(t, len(events))
	barrier(t, ns+":"+comm.String()+":global", comm, a, b)
	for _, p := range []*pod{a, b} {
		for _, ev := range events {
			if n := p.got.count(comm, ev.ID); n != 1 {
				t.Fatalf("pod received event %s %d times, want exactly once", ev.ID[:8], n)
			}
		}
		if p.got.totalCount() != len(events)+1 { // and the sentinel
			t.Fatalf("pod received %d deliveries, want %d", p.got.totalCount(), len(events)+1)
		}
	}
}

func TestSameEventIDInTwoCommunities(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	c1, c2 := tenant.NewCommunityID(), tenant.NewCommunityID()
	a, b, only1 := newPod(t, ns), newPod(t, ns), newPod(t, ns)
	for _, p := range []*pod{a, b} {
		p.Retain(pubsub.Topic{Community: c1})
		p.Retain(pubsub.Topic{Community: c2})
	}
	only1.Retain(pubsub.Topic{Community: c1})

	ev := newEvent(t, 1, "", "same id, two communities")
	ctx := context.Background()
	// a marks (c1, id) for its echo; b then publishes the same id in c2. A
	// mark keyed on the bare id would make a drop b's distinct event.
	if err := a.Publish(ctx, msgOf(c1, ev)); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, msgOf(c2, ev)); err != nil {
		t.Fatal(err)
	}
	a.got.waitTotal(t, 2)
	b.got.waitTotal(t, 2)
	only1.got.waitTotal(t, 1)
	barrier(t, ns+":"+c1.String()+":global", c1, a, b, only1)
	for _, p := range []*pod{a, b} {
		if p.got.count(c1, ev.ID) != 1 || p.got.count(c2, ev.ID) != 1 {
			t.Fatalf("want the event once per community, got c1=%d c2=%d", p.got.count(c1, ev.ID), p.got.count(c2, ev.ID))
		}
	}
	if only1.got.count(c1, ev.ID) != 1 || only1.got.count(c2, ev.ID) != 0 || only1.got.totalCount() != 2 { // and the sentinel
		t.Fatalf("pod retaining only c1: c1=%d c2=%d total=%d", only1.got.count(c1, ev.ID), only1.got.count(c2, ev.ID), only1.got.totalCount())
	}
}

func TestTopicsSubscribedOnlyWhileRetained(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	rc := rawClient(t)
	comm := tenant.NewCommunityID()
	var debounce timers
	a := newPod(t, ns, WithUnsubscribeDelay(100*time.Millisecond), withAfterFunc(debounce.afterFunc))
	b := newPod(t, ns)
	topic := pubsub.Topic{Community: comm, Channel: "general"}
	chName := ns + ":" + comm.String() + ":channel:general"
	ctlName := ns + ":" + comm.String() + ":control"
	globalName := ns + ":" + comm.String() + ":global"

	dirName := ns + ":directory" // deployment-wide, always subscribed
	if chs := pubsubChannels(t, rc, ns); len(chs) != 1 || !chs[dirName] {
		t.Fatalf("channels subscribed before any Retain: %v", chs)
	}
	a.Retain(topic)
	a.Retain(topic)
	chs := pubsubChannels(t, rc, ns)
	if !chs[chName] || !chs[ctlName] || chs[globalName] || len(chs) != 3 {
		t.Fatalf("after Retain want exactly %s and %s, got %v", chName, ctlName, chs)
	}

	// Not retained on a: an event on the global topic does not reach it.
	evGlobal := newEvent(t, 1, "", "global")
	b.Retain(pubsub.Topic{Community: comm})
	if err := b.Publish(context.Background(), msgOf(comm, evGlobal)); err != nil {
		t.Fatal(err)
	}
	evChan := newEvent(t, 9, "general", "in general")
	if err := b.Publish(context.Background(), msgOf(comm, evChan)); err != nil {
		t.Fatal(err)
	}
	a.got.waitTotal(t, 1)
	barrier(t, chName, comm, a)
	if a.got.count(comm, evGlobal.ID) != 0 || a.got.count(comm, evChan.ID) != 1 {
		t.Fatalf("pod a got global=%d channel=%d; want 0 and 1", a.got.count(comm, evGlobal.ID), a.got.count(comm, evChan.ID))
	}
	b.Release(pubsub.Topic{Community: comm})

	a.Release(topic)
	if !pubsubChannels(t, rc, ns)[chName] {
		t.Fatal("topic unsubscribed while still retained once")
	}
	a.Release(topic)
	// Retained again within the debounce: the subscription is kept once
	// the delay has passed.
	a.Retain(topic)
	debounce.elapse()
	if !a.Subscribed(topic) || !pubsubChannels(t, rc, ns)[chName] {
		t.Fatal("topic unsubscribed although re-retained within the debounce")
	}
	a.Release(topic)
	if !a.Subscribed(topic) {
		t.Fatal("topic unsubscribed before the debounce delay passed")
	}
	debounce.elapse()
	eventually(t, "the topic and control channel to be unsubscribed", func() bool {
		return len(pubsubChannels(t, rc, ns)) == 1
	})
	a.Release(topic) // extra release is logged, not fatal
	if a.logs.count("release of a topic that is not retained") != 1 {
		t.Fatal("unbalanced Release was not logged")
	}
}

func TestFailedPublishClearsMark(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	comm := tenant.NewCommunityID()
	a, b := newPod(t, ns), newPod(t, ns)
	topic := pubsub.Topic{Community: comm}
	a.Retain(topic)
	b.Retain(topic)

	ev := newEvent(t, 20001, "", "online")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := a.Publish(ctx, msgOf(comm, ev))
	if err == nil {
		t.Fatal("Publish with a cancelled context succeeded")
	}
	if a.got.count(comm, ev.ID) != 1 {
		t.Fatal("a failed PUBLISH must still deliver locally")
	}
	if a.echo.has(echoKey(comm, ev.ID)) {
		t.Fatal("echo mark left behind after a failed publish")
	}
	// The same ephemeral event sent again through b must now reach a: a stale
	// mark would have swallowed it.
	if err := b.Publish(context.Background(), msgOf(comm, ev)); err != nil {
		t.Fatal(err)
	}
	a.got.waitTotal(t, 2)
	if n := a.got.count(comm, ev.ID); n != 2 {
		t.Fatalf("a got the event %d times, want 2 (local + from b)", n)
	}
}

func TestEchoMarkClearedOnEcho(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	comm := tenant.NewCommunityID()
	a := newPod(t, ns)
	a.Retain(pubsub.Topic{Community: comm})
	ev := newEvent(t, 1, "", "x")
	if err := a.Publish(context.Background(), msgOf(comm, ev)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the echo to clear the mark", func() bool {
		return !a.echo.has(echoKey(comm, ev.ID))
	})
	barrier(t, ns+":"+comm.String()+":global", comm, a)
	if n := a.got.count(comm, ev.ID); n != 1 {
		t.Fatalf("publishing pod delivered its own event %d times, want 1", n)
	}
}

func TestForeignEnvelopesDropped(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	rc := rawClient(t)
	c1, c2 := tenant.NewCommunityID(), tenant.NewCommunityID()
	a := newPod(t, ns)
	a.Retain(pubsub.Topic{Community: c1})
	ch := ns + ":" + c1.String() + ":global"
	ctx := context.Background()

	wrong := newEvent(t, 1, "", "claims c2")
	good := newEvent(t, 1, "", "good")
	payloads := []string{
		string(appendEnvelope(nil, c2, wrong.ID, wrong.AppendJSON(nil))), // community mismatch
		"not an envelope",
		string(appendEnvelope(nil, c1, good.ID, []byte(`{"id":1}`))),    // unparsable event
		string(appendEnvelope(nil, c1, wrong.ID, good.AppendJSON(nil))), // id mismatch
		string(appendEnvelope(nil, c1, good.ID, good.AppendJSON(nil))),  // valid, last
	}
	for _, p := range payloads {
		if err := rc.Do(ctx, rc.B().Publish().Channel(ch).Message(p).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	a.got.waitTotal(t, 1)
	barrier(t, ch, c1, a)
	if a.got.totalCount() != 2 || a.got.count(c1, good.ID) != 1 { // and the sentinel
		t.Fatalf("want only the valid event delivered, got %d deliveries", a.got.totalCount())
	}
	if a.logs.count("community differs") != 1 {
		t.Fatal("community mismatch not logged")
	}
}

func TestControlMessagesReachOtherPod(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	rc := rawClient(t)
	comm, other := tenant.NewCommunityID(), tenant.NewCommunityID()
	a, b := newPod(t, ns), newPod(t, ns)
	a.RetainCommunity(comm)
	b.Retain(pubsub.Topic{Community: comm, Channel: "x"}) // a topic implies control interest

	type got struct {
		c tenant.CommunityID
		m control.Message
	}
	recv := func(p *pod) chan got {
		ch := make(chan got, 16)
		p.ListenControl(func(c tenant.CommunityID, m control.Message) { ch <- got{c, m} })
		return ch
	}
	ra, rb := recv(a), recv(b)

	// Unknown type and foreign community first, on the raw client, then a
	// valid message: only the valid one is delivered.
	ctl := ns + ":" + comm.String() + ":control"
	unknown := `{"v":1,"c":"` + comm.String() + `","o":"x","t":"future_thing","m":{}}`
	foreign, _ := control.Encode(other, "x", control.DisconnectCommunity{Reason: "nope"})
	for _, p := range []string{unknown, string(foreign)} {
		if err := rc.Do(context.Background(), rc.B().Publish().Channel(ctl).Message(p).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}

	want := control.DisconnectPubkey{PubKey: strings.Repeat("ab", 32), Reason: "blocked: banned"}
	if err := a.PublishControl(context.Background(), comm, want); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan got{"a": ra, "b": rb} {
		select {
		case g := <-ch:
			if g.c != comm || g.m != control.Message(want) {
				t.Fatalf("pod %s got %+v in %v", name, g.m, g.c)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("pod %s never got the control message", name)
		}
	}
	// A sentinel on the same channel, after: each pod's next delivery is
	// the sentinel, not an extra copy of the message.
	sentinel := control.DisconnectPubkey{PubKey: strings.Repeat("cd", 32), Reason: "sentinel"}
	enc, err := control.Encode(comm, "test", sentinel)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(context.Background(), rc.B().Publish().Channel(ctl).Message(string(enc)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan got{"a": ra, "b": rb} {
		select {
		case g := <-ch:
			if g.c != comm || g.m != control.Message(sentinel) {
				t.Fatalf("pod %s got %+v in %v, want the sentinel: an extra control delivery", name, g.m, g.c)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("pod %s never got the sentinel", name)
		}
	}
	if b.logs.count("unknown type") != 1 || b.logs.count("community differs") != 1 {
		t.Fatal("unknown type / foreign community not logged")
	}
}

func TestReconnectAfterClientKill(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	rc := rawClient(t)
	comm := tenant.NewCommunityID()
	a, b := newPod(t, ns), newPod(t, ns)
	topic := pubsub.Topic{Community: comm, Channel: "c"}
	a.Retain(topic)
	b.Retain(topic)
	a.RetainCommunity(tenant.NewCommunityID())
	// Kill only once the subscription connection is up: a kill before it
	// is healthy is a failed first connect ("redis unreachable"), not a
	// lost connection, and may miss the dedicated connection entirely.
	eventually(t, "pod a to subscribe", func() bool {
		return a.Healthy() && a.Subscribed(topic)
	})

	// The kill is repeated until pod a notices it: a CLIENT KILL that runs
	// while rueidis is handing out the dedicated subscription connection
	// may list and kill only the pool's connections.
	noticed := false
	for try := 0; try < 5 && !noticed; try++ {
		if n := killClients(t, rc, a.name); n == 0 && try == 0 {
			t.Fatal("found no connection of pod a to kill")
		}
		noticed = within(4*time.Second, func() bool { return a.logs.count("connection lost") > 0 })
	}
	if !noticed {
		t.Fatal("pod a never noticed the lost connection")
	}
	eventually(t, "pod a to resubscribe", func() bool {
		return a.Healthy() && a.Subscribed(topic)
	})
	if len(pubsubChannels(t, rc, ns)) != 4 { // channel, its control, the other community's control, the directory
		t.Fatalf("after reconnect want 4 channels, got %v", pubsubChannels(t, rc, ns))
	}
	// Delivery resumes both ways.
	ev1, ev2 := newEvent(t, 9, "c", "from b"), newEvent(t, 9, "c", "from a")
	if err := b.Publish(context.Background(), msgOf(comm, ev1)); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 5; i++ { // a's publishing connection may still report the kill once
		if err = a.Publish(context.Background(), msgOf(comm, ev2)); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	a.got.waitTotal(t, 2)
	b.got.waitTotal(t, 2)
	barrier(t, ns+":"+comm.String()+":channel:c", comm, a, b)
	if a.got.count(comm, ev1.ID) != 1 || b.got.count(comm, ev2.ID) != 1 || b.got.count(comm, ev1.ID) != 1 {
		t.Fatal("delivery did not resume exactly once after reconnect")
	}
}

func TestRedisOutage(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	proxy := newProxy(t)
	comm := tenant.NewCommunityID()
	a := newPodAt(t, "redis://"+proxy.addr, ns)
	b := newPod(t, ns)
	topic := pubsub.Topic{Community: comm}
	a.Retain(topic)
	b.Retain(topic)
	if err := a.Ready(context.Background()); err != nil {
		t.Fatalf("Ready before the outage: %v", err)
	}

	proxy.down()
	eventually(t, "pod a to report the outage", func() bool { return !a.Healthy() })
	if err := a.Ready(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ready during the outage = %v, want ErrUnavailable", err)
	}
	ev := newEvent(t, 1, "", "during outage")
	start := time.Now()
	if err := a.Publish(context.Background(), msgOf(comm, ev)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Publish during the outage = %v, want ErrUnavailable", err)
	}
	if time.Since(start) > 500*time.Millisecond {
		t.Fatalf("Publish during the outage took %v; it must fail fast", time.Since(start))
	}
	if a.got.count(comm, ev.ID) != 1 {
		t.Fatal("local delivery must happen during the outage")
	}
	a.Retain(pubsub.Topic{Community: comm, Channel: "later"}) // retained while down: no wait

	proxy.up()
	eventually(t, "pod a to recover", func() bool {
		return a.Healthy() && a.Subscribed(pubsub.Topic{Community: comm, Channel: "later"})
	})
	if err := a.Ready(context.Background()); err != nil {
		t.Fatalf("Ready after recovery: %v", err)
	}
	ev2 := newEvent(t, 1, "", "after outage")
	if err := b.Publish(context.Background(), msgOf(comm, ev2)); err != nil {
		t.Fatal(err)
	}
	ev3 := newEvent(t, 9, "later", "retained during the outage")
	if err := b.Publish(context.Background(), msgOf(comm, ev3)); err != nil {
		t.Fatal(err)
	}
	a.got.waitTotal(t, 3)
	barrier(t, ns+":"+comm.String()+":global", comm, a)
	if a.got.count(comm, ev2.ID) != 1 || a.got.count(comm, ev3.ID) != 1 {
		t.Fatal("delivery did not resume after the outage")
	}
}

func TestNewFailsWhenUnreachable(t *testing.T) {
	t.Parallel()
	proxy := newProxy(t)
	proxy.down()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if b, err := New(ctx, "redis://"+proxy.addr); err == nil {
		b.Close()
		t.Fatal("New succeeded against a closed port")
	}
}

func TestCloseStopsEverything(t *testing.T) {
	needRedis(t)
	t.Parallel()
	a := newPod(t, randomName("t"))
	comm := tenant.NewCommunityID()
	a.Retain(pubsub.Topic{Community: comm})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := a.Publish(context.Background(), msgOf(comm, newEvent(t, 1, "", "x"))); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close = %v", err)
	}
	if a.Healthy() || !errors.Is(a.Ready(context.Background()), ErrClosed) {
		t.Fatal("closed broker reports healthy")
	}
	a.Retain(pubsub.Topic{Community: comm}) // must not panic or block
	a.Release(pubsub.Topic{Community: comm})
}

func TestPublishRejectsIncompleteMessages(t *testing.T) {
	needRedis(t)
	t.Parallel()
	a := newPod(t, randomName("t"))
	ev := newEvent(t, 1, "", "x")
	if err := a.Publish(context.Background(), pubsub.Message{Event: ev}); err == nil {
		t.Fatal("message without community accepted")
	}
	if err := a.Publish(context.Background(), pubsub.Message{Community: tenant.NewCommunityID()}); err == nil {
		t.Fatal("message without event accepted")
	}
	if a.got.totalCount() != 0 {
		t.Fatal("rejected messages were delivered")
	}
}

func TestHTagTopic(t *testing.T) {
	c := tenant.NewCommunityID()
	ev := &nostr.Event{Tags: nostr.Tags{{"e", "x"}, {"h"}, {"h", "chan-1"}, {"h", "chan-2"}}}
	if got := HTagTopic(pubsub.Message{Community: c, Event: ev}); got != (pubsub.Topic{Community: c, Channel: "chan-1"}) {
		t.Fatalf("HTagTopic = %+v", got)
	}
	if got := HTagTopic(pubsub.Message{Community: c, Event: &nostr.Event{}}); got != (pubsub.Topic{Community: c}) {
		t.Fatalf("HTagTopic without h = %+v", got)
	}
}

func TestDefaultRouterIsCommunityWide(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	comm := tenant.NewCommunityID()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := New(ctx, "redis://"+testenv.RedisAddr(), WithNamespace(ns)) // default router
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := newPod(t, ns)
	b.Retain(pubsub.Topic{Community: comm})
	a.Retain(pubsub.Topic{Community: comm})
	ev := newEvent(t, 9, "some-channel", "h-tagged, routed community-wide by default")
	if err := a.Publish(context.Background(), msgOf(comm, ev)); err != nil {
		t.Fatal(err)
	}
	b.got.waitTotal(t, 1)
	if b.got.count(comm, ev.ID) != 1 {
		t.Fatal("default router did not use the community-wide topic")
	}
}

// TestDeploymentWideControlReachesEveryPod: a control.HostsChanged reaches a
// pod with no interest in the community (after an archive no pod has any),
// and the directory topic delivers nothing but deployment-wide messages.
func TestDeploymentWideControlReachesEveryPod(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	rc := rawClient(t)
	comm := tenant.NewCommunityID()
	a, b := newPod(t, ns), newPod(t, ns)
	got := make(chan control.Message, 16)
	b.ListenControl(func(c tenant.CommunityID, m control.Message) {
		if c == comm {
			got <- m
		}
	})

	// Not deployment-wide, or not a canonical community: dropped.
	stray, _ := control.Encode(comm, "x", control.DisconnectCommunity{})
	bad := `{"v":1,"c":"not-a-uuid","o":"x","t":"hosts_changed","m":{"hosts":["a.example"]}}`
	for _, p := range []string{string(stray), bad} {
		if err := rc.Do(context.Background(), rc.B().Publish().Channel(ns+":directory").Message(p).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	want := control.HostsChanged{Hosts: []string{"team.example"}, Archived: true}
	if err := a.PublishControl(context.Background(), comm, want); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if !reflect.DeepEqual(m, control.Message(want)) {
			t.Fatalf("got %#v, want %#v", m, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a pod without interest in the community never got HostsChanged")
	}
	if n := len(got); n != 0 {
		t.Fatalf("%d extra deliveries", n)
	}
	if b.logs.count("does not belong on the directory topic") != 2 {
		t.Fatalf("stray directory messages not logged: %d", b.logs.count("does not belong on the directory topic"))
	}
}
