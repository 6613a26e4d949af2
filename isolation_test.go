package buzz

import (
	"bytes"
	"context"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/checker"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/rawclient"
	"github.com/buzzrelay/buzz/internal/tracetest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// The multi-tenant isolation scenario: two communities on two hosts of one
// relay. Every cross-tenant attempt must answer exactly (byte for byte, once
// the attempt's own id is masked) what the same attempt on an object that
// does not exist answers, and every recorded trace must pass the
// independent checker. A deliberately leaking store must be caught.

// frames sends msg and reads frames until one satisfies done.
func (c *rawClient) frames(msg []byte, done func(nostr.RelayMessage) bool) [][]byte {
	c.T.Helper()
	c.SendRaw(msg)
	var out [][]byte
	for {
		b, err := c.NextRaw()
		if err != nil {
			c.T.Fatalf("read: %v", err)
		}
		m, err := nostr.ParseRelayMessage(b)
		if err != nil {
			c.T.Fatalf("unparsable %q", b)
		}
		if _, isAuth := m.(*nostr.AuthChallengeMessage); isAuth {
			continue
		}
		out = append(out, b)
		if done(m) {
			return out
		}
	}
}

func endOfSub(m nostr.RelayMessage) bool {
	switch m.(type) {
	case *nostr.EOSEMessage, *nostr.ClosedMessage:
		return true
	}
	return false
}

func isOK(m nostr.RelayMessage) bool { _, ok := m.(*nostr.OKMessage); return ok }

// masked joins frames with the given ids replaced by a placeholder.
func masked(frames [][]byte, ids ...string) string {
	b := bytes.Join(frames, []byte("\n"))
	for _, id := range ids {
		b = bytes.ReplaceAll(b, []byte(id), []byte("<id>"))
	}
	return string(b)
}

// errorAlphabet checks that every refusal among frames (OK false, CLOSED,
// NOTICE) starts with a NIP-01 prefix and mentions none of forbidden
// (another community's host or ids, storage internals).
func errorAlphabet(t *testing.T, frames [][]byte, forbidden ...string) {
	t.Helper()
	forbidden = append(forbidden, "sql", "SQL", "postgres", "pgx", "constraint", "store:", "b.example")
	for _, b := range frames {
		var msg string
		switch m := mustParse(t, b).(type) {
		case *nostr.OKMessage:
			if m.OK && m.Message == "" {
				continue
			}
			msg = m.Message
		case *nostr.ClosedMessage:
			msg = m.Message
		case *nostr.NoticeMessage:
			msg = m.Message
		default:
			continue
		}
		if !ingest.HasPrefix(msg) {
			t.Errorf("message without a NIP-01 prefix: %q", msg)
		}
		for _, f := range forbidden {
			if f != "" && strings.Contains(msg, f) {
				t.Errorf("message %q leaks %q", msg, f)
			}
		}
	}
}

func mustParse(t *testing.T, b []byte) nostr.RelayMessage {
	t.Helper()
	m, err := nostr.ParseRelayMessage(b)
	if err != nil {
		t.Fatalf("unparsable %q", b)
	}
	return m
}

func sameResponse(t *testing.T, what string, foreign, missing [][]byte, ids ...string) {
	t.Helper()
	errorAlphabet(t, foreign, ids...)
	errorAlphabet(t, missing, ids...)
	if f, m := masked(foreign, ids...), masked(missing, ids...); f != m {
		t.Fatalf("%s: foreign object answered\n %s\nnon-existent answered\n %s", what, f, m)
	}
}

func TestIsolationScenario(t *testing.T) {
	rec := trace.NewRecorder()
	tr := newTestRelay(t, WithTracer(rec.Open), WithRelayKey(testMaster))
	tr.community(t, "a.example")
	tr.community(t, "b.example")
	alice, mallory := newSigner(t), newSigner(t)

	// Community B: an open and a private channel, messages, a note.
	cb := tr.dialHost(t, "b.example")
	cb.AuthAs(alice, "b.example")
	open := cb.createChannel(alice, "b-open", channel.VisibilityOpen)
	priv := cb.createChannel(alice, "b-private", channel.VisibilityPrivate)
	inOpen := alice.Event(nostr.KindChatMessage, now(), "B open", chanTag(open))
	inPriv := alice.Event(nostr.KindChatMessage, now(), "B private", chanTag(priv))
	note := alice.Event(1, now(), "B note")
	for _, ev := range []*nostr.Event{inOpen, inPriv, note} {
		cb.MustAccept(ev)
	}
	eq(t, "duplicate in B", cb.Publish(note).Message, "duplicate: already have this event")
	cb.MustAccept(alice.Event(20001, now(), "typing", chanTag(open)))
	cb.Req("own", hFilter(open))
	cb.Req("feed", nostr.Filter{Kinds: []int{1, 9}})
	cb.Req("byid", nostr.Filter{IDs: []string{note.ID}})

	// Community A: mallory probes B's objects; each probe is compared with
	// the same probe on an object that does not exist.
	ca := tr.dialHost(t, "a.example")
	for _, id := range []channel.ID{open, priv} {
		unknown := storetest.NewChannelID()
		ef := mallory.Event(nostr.KindChatMessage, now(), "probe", chanTag(id))
		eu := mallory.Event(nostr.KindChatMessage, now(), "probe", chanTag(unknown))
		sameResponse(t, "EVENT with foreign h",
			ca.frames(nostr.AppendEventEnvelope(nil, ef.AppendJSON(nil)), isOK),
			ca.frames(nostr.AppendEventEnvelope(nil, eu.AppendJSON(nil)), isOK), ef.ID, eu.ID)
		for _, kind := range []int{nostr.KindJoinRequest, nostr.KindPutUser, nostr.KindDeleteChannel} {
			cf := mallory.Event(kind, now(), "", chanTag(id), nostr.Tag{"p", mallory.Pub()})
			cu := mallory.Event(kind, now(), "", chanTag(unknown), nostr.Tag{"p", mallory.Pub()})
			sameResponse(t, "command on a foreign channel",
				ca.frames(nostr.AppendEventEnvelope(nil, cf.AppendJSON(nil)), isOK),
				ca.frames(nostr.AppendEventEnvelope(nil, cu.AppendJSON(nil)), isOK), cf.ID, cu.ID)
		}
		sameResponse(t, "REQ #h of a foreign channel (unauthenticated)",
			ca.frames(nostr.AppendReq(nil, "x", hFilter(id)), endOfSub),
			ca.frames(nostr.AppendReq(nil, "x", hFilter(unknown)), endOfSub), id.String(), unknown.String())
	}
	// Duplicates of B's stored events, replayed into A: a channel event is
	// refused as naming an unknown channel (never "duplicate:"), a
	// community-wide one is simply new in A.
	fresh := mallory.Event(nostr.KindChatMessage, now(), "fresh", chanTag(storetest.NewChannelID()))
	sameResponse(t, "replay of a foreign channel event",
		ca.frames(nostr.AppendEventEnvelope(nil, inOpen.AppendJSON(nil)), isOK),
		ca.frames(nostr.AppendEventEnvelope(nil, fresh.AppendJSON(nil)), isOK), inOpen.ID, fresh.ID)
	if ok := ca.Publish(note); !ok.OK || ok.Message != "" {
		t.Fatalf("B's note replayed into A = %v %q, want a fresh insert", ok.OK, ok.Message)
	}
	// Reads by id and by #e of B's events answer as for ids that do not exist.
	ghost := strings.Repeat("ab", 32)
	for _, id := range []string{inOpen.ID, inPriv.ID} {
		sameResponse(t, "REQ ids",
			ca.frames(nostr.AppendReq(nil, "i", nostr.Filter{IDs: []string{id}}), endOfSub),
			ca.frames(nostr.AppendReq(nil, "i", nostr.Filter{IDs: []string{ghost}}), endOfSub), id, ghost)
		sameResponse(t, "REQ #e",
			ca.frames(nostr.AppendReq(nil, "e", nostr.Filter{Tags: map[string][]string{"e": {id}}}), endOfSub),
			ca.frames(nostr.AppendReq(nil, "e", nostr.Filter{Tags: map[string][]string{"e": {ghost}}}), endOfSub), id, ghost)
		sameResponse(t, "COUNT ids",
			ca.frames(nostr.AppendCount(nil, "n", nostr.Filter{IDs: []string{id}}), func(m nostr.RelayMessage) bool { return true }),
			ca.frames(nostr.AppendCount(nil, "n", nostr.Filter{IDs: []string{ghost}}), func(m nostr.RelayMessage) bool { return true }), id, ghost)
	}
	// AUTH naming B's host on A's connection answers like an unknown host.
	af := mallory.Event(nostr.KindClientAuth, now(), "", nostr.Tag{"challenge", ca.Challenge}, nostr.Tag{"relay", "ws://b.example"})
	au := mallory.Event(nostr.KindClientAuth, now(), "", nostr.Tag{"challenge", ca.Challenge}, nostr.Tag{"relay", "ws://nowhere.example"})
	sameResponse(t, "AUTH for the other host",
		ca.frames(nostr.AppendAuth(nil, af.AppendJSON(nil)), isOK),
		ca.frames(nostr.AppendAuth(nil, au.AppendJSON(nil)), isOK), af.ID, au.ID)
	// Authenticated in A, the foreign channel is still exactly unknown.
	ca.AuthAs(mallory, "a.example")
	unknown := storetest.NewChannelID()
	sameResponse(t, "REQ #h of a foreign channel (authenticated)",
		ca.frames(nostr.AppendReq(nil, "x", hFilter(priv)), endOfSub),
		ca.frames(nostr.AppendReq(nil, "x", hFilter(unknown)), endOfSub), priv.String(), unknown.String())
	// A's own life: channel, message, reads; nothing of B appears.
	own := ca.createChannel(mallory, "a-chan", channel.VisibilityOpen)
	ca.MustAccept(mallory.Event(nostr.KindChatMessage, now(), "A msg", chanTag(own)))
	for _, ev := range ca.Req("all", nostr.Filter{}) {
		if ev.ID == inOpen.ID || ev.ID == inPriv.ID || ev.PubKey == alice.Pub() && ev.ID != note.ID {
			t.Fatalf("B's event %s (kind %d) read in A", ev.ID, ev.Kind)
		}
	}
	ca.Req("mine", hFilter(own))

	// Host variants: an unmapped host, in any spelling, answers exactly as
	// any other unmapped host; spellings of a mapped host bind to it.
	status := func(host string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, tr.srv.URL, nil)
		req.Host = host
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	s0, b0 := status("c.example")
	if s0 != http.StatusNotFound || strings.Contains(b0, "c.example") {
		t.Fatalf("unmapped host: %d %q", s0, b0)
	}
	for _, h := range []string{"C.Example", "c.example.", "c.example:443", "a.example:8443", "b.example.evil", "a.example.."} {
		if s, b := status(h); s != s0 || b != b0 {
			t.Fatalf("host %q: %d %q, want %d %q", h, s, b, s0, b0)
		}
	}
	for _, h := range []string{"A.EXAMPLE", "a.example.", "a.example:80"} {
		c := tr.dialHost(t, h)
		c.AuthAs(mallory, "a.example")
		if got := filterKind(c.Req("v", hFilter(own)), nostr.KindChatMessage); len(got) != 1 {
			t.Fatalf("host %q does not reach community A: %d messages", h, len(got))
		}
	}

	// Shutdown returns once every connection's work has ended, and the
	// server's Close once every HTTP request's has: the last steps are in
	// the traces.
	if err := tr.relay.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr.srv.Close()
	tracetest.CheckTraces(t, rec, true)
}

// leakyStore returns, for every scoped query of community victim, one
// extra row of community source labelled with its community: the mutation
// the harness must catch.
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
	ctx := context.Background()
	st := openEmbedded(t, t.TempDir())
	a, _, _ := st.EnsureCommunity(ctx, "a.example")
	b, _, _ := st.EnsureCommunity(ctx, "b.example")
	alice := newSigner(t)
	if err := st.Save(ctx, b, alice.Event(1, now(), "B secret")); err != nil {
		t.Fatal(err)
	}
	rec := trace.NewRecorder()
	rel, err := New(WithStore(&leakyStore{Store: st, victim: a, source: b}), WithDirectory(st), WithChannels(),
		WithLogger(quietLogger()), WithTracer(rec.Open))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rel)
	defer srv.Close()
	defer rel.Shutdown(ctx)
	c := rawclient.Dial(t, nil, "ws"+strings.TrimPrefix(srv.URL, "http"), http.Header{"Host": {"a.example"}}, "")
	if got := c.Req("r", nostr.Filter{}); len(got) != 1 {
		t.Fatalf("the leaky store leaked %d events, want 1", len(got))
	}
	if err := rel.Shutdown(ctx); err != nil { // every step is in the trace
		t.Fatal(err)
	}
	ck, _ := checker.New()
	traces := rec.Traces()
	if len(traces) != 1 {
		t.Fatalf("%d traces", len(traces))
	}
	if rep := ck.CheckBytes(traces[0].JSONL); !rep.Has(checker.NonInterference) {
		t.Fatalf("the checker missed the leak: %v\n%s", rep.Violations, traces[0].JSONL)
	}
}
