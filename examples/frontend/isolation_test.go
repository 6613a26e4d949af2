package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/checker"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/tracetest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// The relay's multi-tenant isolation scenario (isolation_test.go of the
// root package), run against this frontend: two communities on two hosts,
// a members-only one, private channels, revocation while a stream is open.
// Every cross-tenant attempt must answer exactly (once the attempt's own
// ids are masked) what the same attempt on an object that does not exist
// answers, and every request's trace must pass the independent checker.

// Store is what the tests' relays keep: events, and channels with their
// members and the community access policy (store/embedded and
// store/postgres; both moderate too).
type Store interface {
	store.EventStore
	store.ChannelStore
}

// backend is a store the frontend runs on.
type backend interface {
	Store
	store.Communities
}

func backends(t *testing.T) map[string]func(t *testing.T) backend {
	return map[string]func(t *testing.T) backend{
		"embedded": func(t *testing.T) backend {
			st, err := embedded.Open(context.Background(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) backend {
			st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
}

// serve runs a relay with the frontend over st, tracing into rec.
func serve(t *testing.T, st Store, dir tenant.Directory, rec *trace.Recorder) client {
	t.Helper()
	broker, err := pubsub.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	return serveWith(t, st, dir, rec, broker)
}

func serveWith(t *testing.T, st Store, dir tenant.Directory, rec *trace.Recorder, broker pubsub.Broker) client {
	t.Helper()
	return serveConfig(t, Config{Store: st, Directory: dir, Broker: broker, Tracer: rec.Open})
}

// Config is what a test relay with the frontend mounted is made of.
// Store, Directory and Broker are required.
type Config struct {
	Store     Store
	Directory tenant.Directory
	Broker    pubsub.Broker
	// Control, when set, is the deployment's control bus (the relay's
	// default is one of its own, in process).
	Control control.Bus
	Tracer  trace.Factory
}

// serveConfig runs a relay of cfg with channels, the tests' relay key and
// the frontend mounted, on a test HTTP server. It shuts the relay down and
// closes cfg.Broker at the end.
func serveConfig(t *testing.T, cfg Config) client {
	t.Helper()
	fe, err := newFrontend("http")
	if err != nil {
		t.Fatal(err)
	}
	opts := []buzz.Option{buzz.WithStore(cfg.Store), buzz.WithDirectory(cfg.Directory), buzz.WithBroker(cfg.Broker),
		buzz.WithChannels(), buzz.WithRelayKey(testRelayKey), buzz.WithFeature(fe)}
	if cfg.Tracer != nil {
		opts = append(opts, buzz.WithTracer(cfg.Tracer))
	}
	if cfg.Control != nil {
		opts = append(opts, buzz.WithControlBus(cfg.Control))
	}
	relay, err := buzz.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(relay)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := relay.Shutdown(ctx); err != nil {
			t.Errorf("relay shutdown: %v", err)
		}
		srv.Close()
		fe.Close()
		cfg.Broker.Close()
	})
	return client{t: t, base: srv.URL}
}

func community(t *testing.T, st backend, host string) tenant.CommunityID {
	t.Helper()
	c, _, err := st.EnsureCommunity(context.Background(), host)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// masked is an answer with ids replaced by a placeholder.
func masked(a answer, ids ...string) string {
	s := fmt.Sprintf("%d %s", a.Status, a.Body)
	for _, id := range ids {
		s = strings.ReplaceAll(s, id, "<id>")
	}
	return s
}

// sameAnswer checks that a foreign object answered as a missing one, and
// that neither answer names another community or storage internals.
func sameAnswer(t *testing.T, what string, foreign, missing answer, ids ...string) {
	t.Helper()
	for _, a := range []answer{foreign, missing} {
		var body struct{ Message string }
		_ = json.Unmarshal([]byte(a.Body), &body)
		if a.Status != http.StatusOK && !ingest.HasPrefix(body.Message) && !strings.HasPrefix(body.Message, "NIP-98: ") {
			t.Errorf("%s: refusal without a NIP-01 prefix: %d %s", what, a.Status, a.Body)
		}
		for _, f := range []string{"b.example", "sql", "SQL", "postgres", "pgx", "constraint", "store:"} {
			if strings.Contains(a.Body, f) {
				t.Errorf("%s: answer %q leaks %q", what, a.Body, f)
			}
		}
	}
	if f, m := masked(foreign, ids...), masked(missing, ids...); f != m {
		t.Fatalf("%s: foreign object answered\n %s\nnon-existent answered\n %s", what, f, m)
	}
}

func h(id channel.ID) []string { return []string{"h", id.String()} }

func hFilter(id channel.ID) gonostr.Filter {
	return gonostr.Filter{Tags: gonostr.TagMap{"h": {id.String()}}}
}

// createChannel creates a channel on host as u and returns its id.
func createChannel(c client, host string, u user, name string, vis channel.Visibility) channel.ID {
	id := storetest.NewChannelID()
	c.mustPost(host, u.event(c.t, nostr.KindCreateChannel, "", h(id), []string{"name", name}, []string{"visibility", string(vis)}), &u)
	return id
}

func TestIsolationScenario(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) { isolationScenario(t, open(t)) })
	}
}

func isolationScenario(t *testing.T, st backend) {
	ctx := context.Background()
	rec := trace.NewRecorder()
	community(t, st, "a.example")
	community(t, st, "b.example")
	c := serve(t, st, st, rec)
	alice, bob, mallory := newUser(t), newUser(t), newUser(t)
	const A, B = "a.example", "b.example"

	// mallory follows everything in A while B lives.
	watch, _ := c.stream(A, gonostr.Filter{}, &mallory)
	watch.stored()

	// Community B: an open and a private channel, messages, a note; bob is
	// a member of the private channel.
	open := createChannel(c, B, alice, "b-open", channel.VisibilityOpen)
	priv := createChannel(c, B, alice, "b-private", channel.VisibilityPrivate)
	c.mustPost(B, alice.event(t, nostr.KindPutUser, "", h(priv), []string{"p", bob.pk}), &alice)
	inOpen := alice.event(t, nostr.KindChatMessage, "B open", h(open))
	inPriv := alice.event(t, nostr.KindChatMessage, "B private", h(priv))
	note := alice.event(t, 1, "B note")
	for _, ev := range []*gonostr.Event{inOpen, inPriv, note} {
		c.mustPost(B, ev, &alice)
	}
	if _, r := c.post(B, note, nil); r.Message != "duplicate: already have this event" {
		t.Fatalf("duplicate in B: %+v", r)
	}
	c.mustPost(B, alice.event(t, 20001, "typing", h(open)), nil)
	if a, got := c.timeline(B, hFilter(priv), &bob); a.Status != http.StatusOK || !slices.Contains(ids(got), inPriv.ID) {
		t.Fatalf("bob reads the private channel: %d %s", a.Status, a.Body)
	}
	if a, _ := c.timeline(B, hFilter(priv), &mallory); a.Status != http.StatusForbidden {
		t.Fatalf("a non-member reads the private channel: %d %s", a.Status, a.Body)
	}
	c.timeline(B, gonostr.Filter{Kinds: []int{1, 9}}, nil)
	c.timeline(B, gonostr.Filter{IDs: []string{note.ID}}, nil)

	// Community A: mallory probes B's objects; each probe is compared with
	// the same probe on an object that does not exist.
	for _, id := range []channel.ID{open, priv} {
		unknown := storetest.NewChannelID()
		ef := mallory.event(t, nostr.KindChatMessage, "probe", h(id))
		eu := mallory.event(t, nostr.KindChatMessage, "probe", h(unknown))
		af, _ := c.post(A, ef, &mallory)
		au, _ := c.post(A, eu, &mallory)
		sameAnswer(t, "POST with a foreign h", af, au, ef.ID, eu.ID)
		for _, kind := range []int{nostr.KindJoinRequest, nostr.KindPutUser, nostr.KindDeleteChannel} {
			cf := mallory.event(t, kind, "", h(id), []string{"p", mallory.pk})
			cu := mallory.event(t, kind, "", h(unknown), []string{"p", mallory.pk})
			af, _ := c.post(A, cf, &mallory)
			au, _ := c.post(A, cu, &mallory)
			sameAnswer(t, "command on a foreign channel", af, au, cf.ID, cu.ID)
		}
		for _, as := range []*user{nil, &mallory} {
			tf, _ := c.timeline(A, hFilter(id), as)
			tu, _ := c.timeline(A, hFilter(unknown), as)
			sameAnswer(t, "timeline #h of a foreign channel", tf, tu, id.String(), unknown.String())
			_, sf := c.stream(A, hFilter(id), as)
			_, su := c.stream(A, hFilter(unknown), as)
			sameAnswer(t, "stream #h of a foreign channel", sf, su, id.String(), unknown.String())
		}
	}
	// B's events replayed into A: a channel event is refused as naming an
	// unknown channel (never "duplicate:"); a community-wide one is new.
	fresh := mallory.event(t, nostr.KindChatMessage, "fresh", h(storetest.NewChannelID()))
	af, _ := c.post(A, inOpen, nil)
	au, _ := c.post(A, fresh, nil)
	sameAnswer(t, "replay of a foreign channel event", af, au, inOpen.ID, fresh.ID)
	if a, r := c.post(A, note, nil); !r.Accepted || r.Message != "" {
		t.Fatalf("B's note replayed into A: %d %s, want a fresh insert", a.Status, a.Body)
	}
	// Reads by id and by #e of B's events answer as for ids that do not
	// exist, on the timeline and on a stream.
	ghost := strings.Repeat("ab", 32)
	for _, id := range []string{inOpen.ID, inPriv.ID} {
		tf, _ := c.timeline(A, gonostr.Filter{IDs: []string{id}}, &mallory)
		tu, _ := c.timeline(A, gonostr.Filter{IDs: []string{ghost}}, &mallory)
		sameAnswer(t, "timeline ids", tf, tu, id, ghost)
		tf, _ = c.timeline(A, gonostr.Filter{Tags: gonostr.TagMap{"e": {id}}}, nil)
		tu, _ = c.timeline(A, gonostr.Filter{Tags: gonostr.TagMap{"e": {ghost}}}, nil)
		sameAnswer(t, "timeline #e", tf, tu, id, ghost)
		sf, _ := c.stream(A, gonostr.Filter{IDs: []string{id}}, nil)
		if got := sf.stored(); len(got) != 0 {
			t.Fatalf("stream by id of B's event from A: %v", ids(got))
		}
	}
	// A NIP-98 token signed for B's URL answers like one for an unknown host.
	tokenFor := func(host string) answer {
		req, _ := http.NewRequest(http.MethodGet, c.base+"/timeline", nil)
		req.Host = A
		req.Header.Set("Authorization", mallory.token(t, http.MethodGet, "http://"+host+"/timeline", nil))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return answer{resp.StatusCode, b.String()}
	}
	sameAnswer(t, "NIP-98 token for the other host", tokenFor(B), tokenFor("nowhere.example"))

	// A's own life: a channel, a message, reads; nothing of B appears.
	own := createChannel(c, A, mallory, "a-chan", channel.VisibilityOpen)
	c.mustPost(A, mallory.event(t, nostr.KindChatMessage, "A msg", h(own)), &mallory)
	_, all := c.timeline(A, gonostr.Filter{}, &mallory)
	for _, ev := range all {
		if ev.ID == inOpen.ID || ev.ID == inPriv.ID || ev.PubKey == alice.pk && ev.ID != note.ID {
			t.Fatalf("B's event %s (kind %d) read in A", ev.ID, ev.Kind)
		}
	}

	// Nothing of B reached A's stream: up to A's own last message, only
	// A's events (B's note replayed into A is A's).
	sentinel := mallory.event(t, 1, "sentinel")
	c.mustPost(A, sentinel, &mallory)
	for {
		ev := watch.nextEvent()
		if ev.PubKey == alice.pk && ev.ID != note.ID {
			t.Fatalf("B's event %s (kind %d) streamed in A", ev.ID, ev.Kind)
		}
		if ev.ID == sentinel.ID {
			break
		}
	}

	// Host variants: an unmapped host, in any spelling, answers exactly as
	// any other; spellings of a mapped host reach it.
	_, unmapped := c.do(http.MethodGet, "c.example", "/timeline", nil, nil)
	if unmapped.Status != http.StatusNotFound || strings.Contains(unmapped.Body, "c.example") {
		t.Fatalf("unmapped host: %+v", unmapped)
	}
	for _, host := range []string{"C.Example", "c.example.", "c.example:443", "a.example:8443", "b.example.evil", "a.example.."} {
		for _, path := range []string{"/timeline", "/stream", "/events", "/nowhere"} {
			if _, a := c.do(http.MethodGet, host, path, nil, nil); a != unmapped {
				t.Fatalf("host %q %s: %+v, want %+v", host, path, a, unmapped)
			}
		}
	}
	ownClient := hFilter(own) // the channel's client events: its 9007 and one message
	ownClient.Kinds = []int{nostr.KindCreateChannel, nostr.KindChatMessage}
	for _, host := range []string{"A.EXAMPLE", "a.example.", "a.example:80"} {
		if a, got := c.timeline(host, ownClient, nil); a.Status != http.StatusOK || len(got) != 2 {
			t.Fatalf("host %q does not reach community A: %d %s", host, a.Status, a.Body)
		}
	}

	// A members-only community: only members read, and a member removed
	// while following loses the stream.
	const M = "m.example"
	m := community(t, st, M)
	olga, carol := newUser(t), newUser(t)
	for _, err := range []error{
		st.SetCommunityAccess(ctx, m, channel.AccessMembers),
		st.PutCommunityMember(ctx, m, olga.pk, channel.RoleAdmin),
		st.PutCommunityMember(ctx, m, carol.pk, channel.RoleMember),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if a, _ := c.timeline(M, gonostr.Filter{}, nil); a.Status != http.StatusUnauthorized || !strings.Contains(a.Body, channel.MsgMembersOnlyAuth) {
		t.Fatalf("members-only, anonymous: %d %s", a.Status, a.Body)
	}
	if a, _ := c.timeline(M, gonostr.Filter{}, &mallory); a.Status != http.StatusForbidden || !strings.Contains(a.Body, channel.MsgMembersOnly) {
		t.Fatalf("members-only, a stranger: %d %s", a.Status, a.Body)
	}
	c.mustPost(M, olga.event(t, 1, "members only"), &olga)
	carolStream, a := c.stream(M, gonostr.Filter{Kinds: []int{1}}, &carol)
	if carolStream == nil || len(carolStream.stored()) != 1 {
		t.Fatalf("members-only, a member: %d %s", a.Status, a.Body)
	}
	c.mustPost(M, olga.event(t, nostr.KindRemoveCommunityMember, "", []string{"p", carol.pk}), &olga)
	if msg := carolStream.next(); msg.event != "closed" || msg.data != "restricted: community access revoked" {
		t.Fatalf("removed member's stream: %+v", msg)
	}

	// Revocation while following B: bob follows every message and the
	// private channel alone; removed from it, the channel's stream is
	// closed and the other stops delivering the channel.
	msgs := gonostr.Filter{Kinds: []int{nostr.KindChatMessage}}
	every, _ := c.stream(B, msgs, &bob)
	only, _ := c.stream(B, hFilter(priv), &bob)
	if got := ids(every.stored()); !slices.Contains(got, inPriv.ID) || !slices.Contains(got, inOpen.ID) {
		t.Fatalf("bob's stored messages: %v", got)
	}
	if got := ids(only.stored()); !slices.Contains(got, inPriv.ID) {
		t.Fatalf("bob's private channel: %v", got)
	}
	before := alice.event(t, nostr.KindChatMessage, "before", h(priv))
	c.mustPost(B, before, &alice)
	if every.nextEvent().ID != before.ID || only.nextEvent().ID != before.ID {
		t.Fatal("live private message not delivered to a member")
	}
	c.mustPost(B, alice.event(t, nostr.KindRemoveUser, "", h(priv), []string{"p", bob.pk}), &alice)
	if msg := only.next(); msg.event != "closed" || msg.data != "restricted: channel access revoked" {
		t.Fatalf("the private channel's stream after revocation: %+v", msg)
	}
	c.mustPost(B, alice.event(t, nostr.KindChatMessage, "after", h(priv)), &alice)
	openMsg := alice.event(t, nostr.KindChatMessage, "open after", h(open))
	c.mustPost(B, openMsg, &alice)
	if got := every.nextEvent(); got.ID != openMsg.ID {
		t.Fatalf("after revocation bob received %q (%s), want the open channel's message", got.Content, got.ID)
	}

	tracetest.CheckTraces(t, rec, true)
}

// slowBroker publishes a moment after it is asked to, widening the window
// between an event's save and its publication that the stored-to-live
// handoff must cover.
type slowBroker struct{ *pubsub.Local }

func (b slowBroker) Publish(ctx context.Context, m pubsub.Message) error {
	time.Sleep(20 * time.Millisecond)
	return b.Local.Publish(ctx, m)
}

// TestStoredToLiveHandoff opens streams while events are being published:
// each stream gets every event exactly once, stored or live.
func TestStoredToLiveHandoff(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			community(t, st, "a.example")
			local, err := pubsub.NewLocal()
			if err != nil {
				t.Fatal(err)
			}
			c := serveWith(t, st, st, trace.NewRecorder(), slowBroker{local})
			alice := newUser(t)
			const n = 60
			evs := make([]*gonostr.Event, n)
			for i := range evs {
				evs[i] = alice.event(t, 1, fmt.Sprint("note ", i))
			}
			// A stream opens as every 8th event is being published.
			var wg sync.WaitGroup
			posting := make(chan struct{})
			wg.Go(func() {
				for i, ev := range evs {
					if i%8 == 0 {
						posting <- struct{}{}
					}
					c.mustPost("a.example", ev, nil)
				}
				close(posting)
			})
			var streams []*sse
			for range posting {
				s, a := c.stream("a.example", gonostr.Filter{Kinds: []int{1}}, nil)
				if s == nil {
					t.Fatalf("stream: %+v", a)
				}
				streams = append(streams, s)
			}
			wg.Wait()
			last := alice.event(t, 1, "last")
			c.mustPost("a.example", last, nil)
			for i, s := range streams {
				got := map[string]int{}
				for _, ev := range s.stored() {
					got[ev.ID]++
				}
				for {
					ev := s.nextEvent()
					got[ev.ID]++
					if ev.ID == last.ID {
						break
					}
				}
				for _, ev := range append(evs, last) {
					if got[ev.ID] != 1 {
						t.Fatalf("stream %d received %s %d times", i, ev.Content, got[ev.ID])
					}
				}
			}
		})
	}
}

// leakyStore returns, for every scoped query of community victim, one extra
// row of community source labelled with its community: the mutation the
// harness must catch.
type leakyStore struct {
	*embedded.Store
	victim, source tenant.CommunityID
}

func (l *leakyStore) QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, sc channel.Scope) iter.Seq2[store.Record, error] {
	inner := l.Store.QueryScoped(ctx, c, f, sc)
	if c != l.victim {
		return inner
	}
	return func(yield func(store.Record, error) bool) {
		for rec, err := range l.Store.QueryScoped(ctx, l.source, nostr.Filter{Limit: 1, LimitSet: true}, channel.AllChannels()) {
			if err != nil || !yield(rec, nil) {
				return
			}
		}
		for rec, err := range inner {
			if !yield(rec, err) {
				return
			}
		}
	}
}

func TestIsolationCheckerCatchesLeak(t *testing.T) {
	st, err := embedded.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := community(t, st, "a.example")
	b := community(t, st, "b.example")
	rec := trace.NewRecorder()
	c := serve(t, &leakyStore{Store: st, victim: a, source: b}, st, rec)
	alice := newUser(t)
	c.mustPost("b.example", alice.event(t, 1, "B secret"), nil)
	before := len(rec.Traces())
	for _, live := range []bool{false, true} {
		var got []gonostr.Event
		if live {
			s, _ := c.stream("a.example", gonostr.Filter{}, nil)
			got = s.stored()
		} else {
			_, got = c.timeline("a.example", gonostr.Filter{}, nil)
		}
		if len(got) != 1 {
			t.Fatalf("the leaky store leaked %d events, want 1", len(got))
		}
	}
	ck, _ := checker.New()
	traces := rec.Traces()[before:]
	if len(traces) != 2 {
		t.Fatalf("%d traces", len(traces))
	}
	for _, tr := range traces {
		if rep := ck.CheckBytes(tr.JSONL); !rep.Has(checker.NonInterference) {
			t.Fatalf("the checker missed the leak: %v\n%s", rep.Violations, tr.JSONL)
		}
	}
}
