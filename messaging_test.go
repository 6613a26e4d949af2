package buzz

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
)

// Buzz's messaging kinds driven by an independent client (go-nostr): the
// message kinds 40002–40008, edits by their author only, reactions one per
// (author, emoji, target) with NIP-09 removal and cheap counts, kind 0 as
// JSON, on both backends and isolated per community.

// sendBase is the created_at send counts from: a minute in the past.
var sendBase = gonostr.Now() - 60

// send signs an event of kind with content and tags as u and publishes
// it; it returns "" when accepted, else the relay's message, and the id.
func (u *nip29User) send(kind int, content string, tags ...gonostr.Tag) (string, string) {
	u.t.Helper()
	u.seq++
	// A created_at of its own per event: two events alike in all else
	// are distinct (a clock tick must not make them one).
	ev := gonostr.Event{Kind: kind, CreatedAt: sendBase + gonostr.Timestamp(u.seq), Content: content, Tags: append(gonostr.Tags{}, tags...)}
	if err := ev.Sign(u.sk); err != nil {
		u.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := u.rl.Publish(ctx, ev); err != nil {
		return strings.TrimPrefix(err.Error(), "msg: "), ev.ID
	}
	return "", ev.ID
}

// sent is send that must be accepted; it returns the id.
func (u *nip29User) sent(what string, kind int, content string, tags ...gonostr.Tag) string {
	u.t.Helper()
	msg, id := u.send(kind, content, tags...)
	if msg != "" {
		u.t.Fatalf("%s refused: %s", what, msg)
	}
	return id
}

// refusedWith is send that must be refused with exactly want.
func (u *nip29User) refusedWith(what, want string, kind int, content string, tags ...gonostr.Tag) {
	u.t.Helper()
	if msg, _ := u.send(kind, content, tags...); msg != want {
		u.t.Fatalf("%s: %q, want %q", what, msg, want)
	}
}

// count is a COUNT over one filter.
func (u *nip29User) count(f gonostr.Filter) int64 {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, _, err := u.rl.Count(ctx, gonostr.Filters{f})
	if err != nil {
		u.t.Fatalf("count: %v", err)
	}
	return n
}

func toEvent(e *gonostr.Event) *nostr.Event {
	tags := make(nostr.Tags, len(e.Tags))
	for i, t := range e.Tags {
		tags[i] = nostr.Tag(t)
	}
	return &nostr.Event{ID: e.ID, PubKey: e.PubKey, CreatedAt: int64(e.CreatedAt), Kind: e.Kind, Tags: tags, Content: e.Content}
}

func TestMessagingKinds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		r := startNIP29Relay(t, b)
		alice, bob, carol := r.connect(t, r.url, true), r.connect(t, r.url, true), r.connect(t, r.url, true)
		gid := storetest.NewChannelID().String()
		h := gonostr.Tag{"h", gid}
		alice.must("create", nostr.KindCreateChannel, gid, gonostr.Tag{"name", "general"})

		// Messages: every kind of 40002–40008 needs its channel.
		for kind := messaging.KindMessage; kind <= messaging.KindDiff; kind++ {
			alice.refusedWith("no h", "invalid: kind "+strconv.Itoa(kind)+" requires an h tag naming its channel", kind, "x")
		}
		msg := alice.sent("message", messaging.KindMessage, "hello", h)
		alice.sent("pinned", messaging.KindPinned, "", h, gonostr.Tag{"e", msg})
		alice.sent("bookmarked", messaging.KindBookmarked, "", h, gonostr.Tag{"e", msg})
		alice.sent("scheduled", messaging.KindScheduled, "later", h)
		ghost := storetest.NewChannelID().String()
		alice.refusedWith("unknown channel", channel.MsgChannelDenied, messaging.KindMessage, "x", gonostr.Tag{"h", ghost})

		// Edits: the author's only, of a message of the same channel.
		bob.refusedWith("bob edits alice's", messaging.MsgEditNotAuthor, messaging.KindEdit, "hijacked", h, gonostr.Tag{"e", msg})
		alice.refusedWith("edit without e", messaging.MsgEditNoTarget, messaging.KindEdit, "x", h)
		alice.refusedWith("edit of nothing", messaging.MsgEditNotFound, messaging.KindEdit, "x", h, gonostr.Tag{"e", strings.Repeat("0", 64)})
		note := alice.sent("community-wide note", 1, "a note")
		alice.refusedWith("edit of a community-wide note", messaging.MsgEditNoChannel, messaging.KindEdit, "x", h, gonostr.Tag{"e", note})
		alice.sent("edit", messaging.KindEdit, "hello, edited", h, gonostr.Tag{"e", msg})
		orig := bob.query(gonostr.Filter{IDs: []string{msg}})
		edits := bob.query(gonostr.Filter{Kinds: []int{messaging.KindEdit}, Tags: gonostr.TagMap{"e": {msg}}})
		if len(orig) != 1 || len(edits) != 1 {
			t.Fatalf("message %d, edits %d", len(orig), len(edits))
		}
		var evs []*nostr.Event
		for _, e := range edits {
			evs = append(evs, toEvent(e))
		}
		eq(t, "current text", messaging.CurrentText(toEvent(orig[0]), evs), "hello, edited")

		// Diffs.
		diff := []gonostr.Tag{h, {"repo", "https://github.com/x/y"}, {"commit", "abc1234"}}
		alice.sent("diff", messaging.KindDiff, "--- a\n+++ b\n", diff...)
		alice.refusedWith("big diff", "invalid: diff content exceeds 60KB limit (got 61441 bytes)", messaging.KindDiff, strings.Repeat("x", 61441), diff...)
		alice.refusedWith("diff without commit", messaging.MsgDiffNoCommit, messaging.KindDiff, "d", h, gonostr.Tag{"repo", "https://x"})
		if got := bob.query(gonostr.Filter{Search: "edited"}); len(got) != 1 || got[0].Kind != messaging.KindEdit {
			t.Fatalf("search of an edit: %d events", len(got))
		}

		// Profiles.
		alice.refusedWith("profile not JSON", messaging.MsgProfileNotJSON, 0, "{name")
		alice.refusedWith("profile array", messaging.MsgProfileNotObject, 0, "[]")
		alice.sent("profile", 0, `{"name":"alice"}`)

		// Reactions: one per (author, emoji, target); "" is "+".
		onMsg := gonostr.Tag{"e", msg}
		fire := bob.sent("bob 🔥", 7, "🔥", h, onMsg)
		bob.refusedWith("bob 🔥 again", messaging.MsgReactionExists, 7, "🔥", h, onMsg)
		bob.sent("bob +", 7, "", h, onMsg)
		bob.refusedWith("bob + spelled out", messaging.MsgReactionExists, 7, "+", h, onMsg)
		carol.sent("carol 🔥", 7, "🔥", h, onMsg)
		bob.sent("bob 🔥 on the note", 7, "🔥", gonostr.Tag{"e", note})
		bob.refusedWith("no target", messaging.MsgReactionNoTarget, 7, "🔥", h)
		bob.refusedWith("unknown target", messaging.MsgReactionNotFound, 7, "🔥", h, gonostr.Tag{"e", strings.Repeat("0", 64)})
		// Without h a reaction is NIP-25's, its target maybe stored
		// elsewhere: never looked up, so accepting it tells nothing of a
		// channel message or a gift wrap stored here.
		wrap := carol.sent("a gift wrap to alice", nostr.KindGiftWrap, "sealed", gonostr.Tag{"p", alice.pk})
		bob.sent("a gift wrap's id, without h", 7, "👀", gonostr.Tag{"e", wrap})
		bob.sent("an unknown id, without h", 7, "👀", gonostr.Tag{"e", strings.Repeat("1", 64)})
		bob.refusedWith("long emoji", "invalid: reaction emoji exceeds 64 characters (got 65)", 7, strings.Repeat("a", 65), h, onMsg)
		counts := gonostr.Filter{Kinds: []int{7}, Tags: gonostr.TagMap{"e": {msg}}}
		eq(t, "reactions on the message", bob.count(counts), 3)
		// NIP-09 removal frees the slot.
		bob.sent("bob deletes his 🔥", 5, "", gonostr.Tag{"e", fire})
		eq(t, "after the deletion", bob.count(counts), 2)
		bob.sent("bob 🔥 once more", 7, "🔥", h, onMsg)
		eq(t, "after the new reaction", bob.count(counts), 3)
		// A channel admin's delete-event (9005) frees it too.
		carols := carol.query(gonostr.Filter{Kinds: []int{7}, Authors: []string{carol.pk}, Tags: gonostr.TagMap{"e": {msg}}})
		if len(carols) != 1 {
			t.Fatalf("carol's reactions: %d", len(carols))
		}
		alice.sent("admin deletes carol's", nostr.KindDeleteEvent, "", h, gonostr.Tag{"e", carols[0].ID})
		carol.sent("carol 🔥 again", 7, "🔥", h, onMsg)

		// Another community: none of the events exist there, and the same
		// reaction is a new slot.
		zed := r.connect(t, r.otherURL, true)
		zed.refusedWith("channel reaction to a foreign message", channel.MsgChannelDenied, 7, "🔥", h, gonostr.Tag{"e", msg})
		zed.refusedWith("edit in a foreign channel", channel.MsgChannelDenied, messaging.KindEdit, "x", h, gonostr.Tag{"e", msg})
		other := zed.sent("a note there", 1, "there")
		zed.sent("zed 🔥", 7, "🔥", gonostr.Tag{"e", other})
		zed.refusedWith("zed 🔥 again", messaging.MsgReactionExists, 7, "🔥", gonostr.Tag{"e", other})
		eq(t, "no foreign reactions counted", zed.count(counts), 0)
	})
}

// TestKindAllowList: off by default; with Buzz's list, other kinds get
// Buzz's refusal and Buzz's kinds are accepted.
func TestKindAllowList(t *testing.T) {
	plain := newTestRelay(t)
	c, s := plain.dial(t), newSigner(t)
	c.MustAccept(s.Event(4, now(), "any kind"))
	c.MustAccept(s.Event(30402, now(), "any kind", nostr.Tag{"d", "x"}))

	tr := newTestRelay(t, WithKindAllowList(messaging.BuzzKinds()))
	c = tr.dial(t)
	eq(t, "kind 4", c.Publish(s.Event(4, now(), "not buzz")).Message, messaging.MsgUnknownKind)
	eq(t, "kind 30402", c.Publish(s.Event(30402, now(), "not buzz", nostr.Tag{"d", "x"})).Message, messaging.MsgUnknownKind)
	c.MustAccept(s.Event(1, now(), "a note"))
	c.MustAccept(s.Event(0, now(), `{"name":"s"}`))
	eq(t, "typing passes the list (and needs its h tag)", c.Publish(s.Event(20002, now(), "")).Message, ingest.MsgTypingNoChannel)

	k, err := messaging.ParseKinds("1,5000-5999")
	if err != nil {
		t.Fatal(err)
	}
	tr = newTestRelay(t, WithKindAllowList(k))
	c = tr.dial(t)
	c.MustAccept(s.Event(5001, now(), "in range"))
	eq(t, "kind 9 outside the list", c.Publish(s.Event(7, now(), "+", nostr.Tag{"e", strings.Repeat("a", 64)})).Message, messaging.MsgUnknownKind)
}

// TestReactionUniqueAcrossPods: many identical reactions sent at once, to
// two relays sharing one PostgreSQL database, store exactly one.
func TestReactionUniqueAcrossPods(t *testing.T) {
	url := pgtest.NewDatabase(t)
	open := func() store.Backend {
		st, err := postgres.Open(context.Background(), url, postgres.WithLogger(quietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	const host = "react.example"
	pods := []*pod{startPod(t, open(), host), startPod(t, open(), host)}
	alice, bob := newSigner(t), newSigner(t)
	c := pods[0].dial(t)
	target := alice.Event(1, now(), "react to me")
	c.MustAccept(target)

	const n = 16
	conns := make([]*rawClient, n)
	evs := make([]*nostr.Event, n)
	for i := range n {
		conns[i] = pods[i%2].dial(t)
		// Distinct events (created_at), one slot.
		evs[i] = bob.Event(7, now()-int64(i), "🎉", nostr.Tag{"e", target.ID})
	}
	oks := make([]*nostr.OKMessage, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			oks[i] = conns[i].PublishOnce(evs[i])
		}()
	}
	wg.Wait()
	accepted := 0
	for i, ok := range oks {
		switch {
		case ok.OK:
			accepted++
		case ok.Message != messaging.MsgReactionExists:
			t.Errorf("reaction %d: %q", i, ok.Message)
		}
	}
	eq(t, "accepted", accepted, 1)
	for _, p := range pods {
		got, err := p.st.Count(context.Background(), p.tc.Community(), []nostr.Filter{{Kinds: []int{7}, Tags: map[string][]string{"e": {target.ID}}}})
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "stored reactions", got, int64(1))
	}
}

// TestReactionSlotTakeover: with a store whose slots the relay claims
// (store.ReactionStore), a slot whose reaction was never stored (a write
// that did not finish) holds while that write may be in flight and is
// taken over after the grace period; a stored holder always holds. (A
// store keeping the slots with the events has no such slot.)
func TestReactionSlotTakeover(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		rs, ok := st.(store.ReactionStore)
		if !ok {
			t.Skip("this store keeps the slots with the events: storetest.RunReactionSlots")
		}
		var skew atomic.Int64 // the relay clock's lead over time.Now
		tr := backendRelay(t, st, WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }))
		alice, bob := newSigner(t), newSigner(t)
		c := tr.dial(t)
		target := alice.Event(1, now(), "target")
		c.MustAccept(target)
		ctx, comm := context.Background(), tr.tc.Community()
		key := func(emoji string) store.ReactionKey {
			return store.ReactionKey{PubKey: bob.Pub(), Target: target.ID, Emoji: emoji}
		}
		ghost := strings.Repeat("f", 64) // an event the store never got
		if _, ok, err := rs.ClaimReaction(ctx, comm, key("👀"), ghost, time.Now()); err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		if _, ok, err := rs.ClaimReaction(ctx, comm, key("🙈"), ghost, time.Now().Add(-2*time.Minute)); err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		// One base time: a second ticking over between two events must not
		// give two of them the same created_at, and so the same id.
		t0 := now()
		eq(t, "slot of a write in flight", c.Publish(bob.Event(7, t0, "👀", nostr.Tag{"e", target.ID})).Message, messaging.MsgReactionExists)
		c.MustAccept(bob.Event(7, t0, "🙈", nostr.Tag{"e", target.ID}))
		eq(t, "then held by the stored reaction", c.Publish(bob.Event(7, t0-1, "🙈", nostr.Tag{"e", target.ID})).Message, messaging.MsgReactionExists)
		// Past the grace period a stored holder still holds; one never
		// stored is taken over.
		skew.Store(int64(2 * time.Minute))
		eq(t, "a stored holder past the grace", c.Publish(bob.Event(7, t0-2, "🙈", nostr.Tag{"e", target.ID})).Message, messaging.MsgReactionExists)
		c.MustAccept(bob.Event(7, t0-3, "👀", nostr.Tag{"e", target.ID}))
	})
}
