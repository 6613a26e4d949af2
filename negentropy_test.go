package buzz

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	gonostr "github.com/nbd-wtf/go-nostr"
	gonip77 "github.com/nbd-wtf/go-nostr/nip77"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nip77"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip17"
	"github.com/buzzrelay/buzz/store"
)

// NIP-77 negentropy over real WebSockets, driven by go-nostr's nip77 client
// (an independent client implementation) and by package nip77's client on
// an authenticated connection.

// memStore is a go-nostr RelayStore in memory: the client side of
// go-nostr's NegentropySync.
type memStore struct {
	mu  sync.Mutex
	evs map[string]gonostr.Event
}

func newMemStore(evs ...*nostr.Event) *memStore {
	m := &memStore{evs: map[string]gonostr.Event{}}
	for _, ev := range evs {
		m.evs[ev.ID] = toGoNostr(ev)
	}
	return m
}

func toGoNostr(ev *nostr.Event) gonostr.Event {
	var g gonostr.Event
	if err := json.Unmarshal(ev.AppendJSON(nil), &g); err != nil {
		panic(err)
	}
	return g
}

func (m *memStore) Publish(_ context.Context, ev gonostr.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evs[ev.ID] = ev
	return nil
}

func (m *memStore) QuerySync(_ context.Context, f gonostr.Filter) ([]*gonostr.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*gonostr.Event
	for _, ev := range m.evs {
		if f.Matches(&ev) {
			out = append(out, &ev)
		}
	}
	return out, nil
}

func (m *memStore) QueryEvents(ctx context.Context, f gonostr.Filter) (chan *gonostr.Event, error) {
	evs, _ := m.QuerySync(ctx, f)
	ch := make(chan *gonostr.Event, len(evs))
	for _, ev := range evs {
		ch <- ev
	}
	close(ch)
	return ch, nil
}

func (m *memStore) has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.evs[id]
	return ok
}

// goNostrReconcile runs go-nostr's negentropy client (its nip77
// envelopes and negentropy implementation, over a WebSocket of its own)
// against url with the local set evs, and returns the ids only the client
// has and those only the relay has. (go-nostr's NegentropySync and
// FetchIDsOnly helpers are not used: its Relay type races with itself
// under -race.)
func goNostrReconcile(t *testing.T, url string, evs []*gonostr.Event, f gonostr.Filter) (have, need []string) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	vec := vector.New()
	for _, ev := range evs {
		vec.Insert(ev.CreatedAt, ev.ID)
	}
	vec.Seal()
	neg := negentropy.New(vec, 60_000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := range neg.Haves {
			have = append(have, id)
		}
	}()
	needDone := make(chan struct{})
	go func() {
		defer close(needDone)
		for id := range neg.HaveNots {
			need = append(need, id)
		}
	}()
	write := func(env interface{ MarshalJSON() ([]byte, error) }) {
		b, _ := env.MarshalJSON()
		if err := ws.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Fatal(err)
		}
	}
	write(gonip77.OpenEnvelope{SubscriptionID: "gn", Filter: f, Message: neg.Start()})
	for {
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		switch env := gonip77.ParseNegMessage(string(b)).(type) {
		case *gonip77.ErrorEnvelope:
			t.Fatalf("NEG-ERR: %s", env.Reason)
		case *gonip77.MessageEnvelope:
			next, err := neg.Reconcile(env.Message)
			if err != nil {
				t.Fatalf("go-nostr reconcile: %v", err)
			}
			if next == "" {
				write(gonip77.CloseEnvelope{SubscriptionID: "gn"})
				<-done
				<-needDone
				return have, need
			}
			write(gonip77.MessageEnvelope{SubscriptionID: "gn", Message: next})
		}
	}
}

// goNostrSync reconciles local with the relay at url over f with go-nostr's
// client, then downloads what only the relay has (REQ by ids) and uploads
// what only local has (EVENT), with go-nostr's envelopes.
func goNostrSync(t *testing.T, local *memStore, url string, f gonostr.Filter) {
	t.Helper()
	evs, _ := local.QuerySync(context.Background(), f)
	have, need := goNostrReconcile(t, url, evs, f)
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	write := func(env gonostr.Envelope) {
		b, _ := env.MarshalJSON()
		if err := ws.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Fatal(err)
		}
	}
	read := func() gonostr.Envelope {
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return gonostr.ParseMessage(string(b))
	}
	if len(need) > 0 {
		write(&gonostr.ReqEnvelope{SubscriptionID: "down", Filters: gonostr.Filters{{IDs: need}}})
	loop:
		for {
			switch env := read().(type) {
			case *gonostr.EventEnvelope:
				if !env.Event.CheckID() {
					t.Fatalf("downloaded event %s has a wrong id", env.Event.ID)
				}
				_ = local.Publish(context.Background(), env.Event)
			case *gonostr.EOSEEnvelope:
				break loop
			case *gonostr.ClosedEnvelope:
				t.Fatalf("CLOSED: %s", env.Reason)
			}
		}
	}
	for _, id := range have {
		local.mu.Lock()
		ev := local.evs[id]
		local.mu.Unlock()
		write(&gonostr.EventEnvelope{Event: ev})
		for {
			if ok, isOK := read().(*gonostr.OKEnvelope); isOK && ok.EventID == id {
				if !ok.OK {
					t.Fatalf("upload of %s refused: %s", id, ok.Reason)
				}
				break
			}
		}
	}
}

// rawTransport carries package nip77's client over a test connection.
type rawTransport struct{ c *rawClient }

func (t rawTransport) Send(_ context.Context, m []byte) error { t.c.SendRaw(m); return nil }
func (t rawTransport) Recv(context.Context) ([]byte, error)   { return t.c.NextRaw() }

// negIDs reconciles an empty set with the relay's set for f on c: the ids
// the relay reveals to c's reader.
func negIDs(t *testing.T, c *rawClient, f nostr.Filter) []string {
	t.Helper()
	res, err := nip77.Reconcile(context.Background(), rawTransport{c}, "ids", f.AppendJSON(nil), nil, nip77.MinFrameBytes, nil)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res.Need
}

func TestNegentropyInterop(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		ctx := context.Background()
		tr := backendRelay(t, st)
		owner, member, alice, bob := newSigner(t), newSigner(t), newSigner(t), newSigner(t)
		pub := tr.dial(t)
		priv := pub.createChannel(owner, "private", channel.VisibilityPrivate)
		eq(t, "put member", pub.command(owner, nostr.KindPutUser, priv, nostr.Tag{"p", member.Pub()}).OK, true)
		secret := member.Event(nostr.KindChatMessage, now(), "secret", chanTag(priv))
		pub.MustAccept(secret)
		wrap, err := nip17.Message(owner.SK, alice.Pub(), "for alice only")
		if err != nil {
			t.Fatal(err)
		}
		pub.MustAccept(wrap)
		// Another community of the same relay and store.
		if _, _, err := st.EnsureCommunity(ctx, "other.example"); err != nil {
			t.Fatal(err)
		}
		other := tr.dialHost(t, "other.example")
		elsewhere := owner.Event(1, now(), "another community")
		other.MustAccept(elsewhere)

		// Shared notes, notes only the relay has, notes only the client has.
		var shared, relayOnly, clientOnly []*nostr.Event
		for i := range 40 {
			ev := owner.Event(1, now()-int64(i), fmt.Sprintf("note %d", i))
			switch {
			case i%10 == 3:
				clientOnly = append(clientOnly, ev)
				continue
			case i%10 == 7:
				relayOnly = append(relayOnly, ev)
			default:
				shared = append(shared, ev)
			}
			pub.MustAccept(ev)
		}

		// What an anonymous reader's reconciliation reveals (go-nostr's
		// client with an empty set learns every id the relay has).
		revealed := map[string]bool{}
		have, need := goNostrReconcile(t, tr.url, nil, gonostr.Filter{})
		if len(have) != 0 {
			t.Fatalf("an empty set has %d ids the relay lacks", len(have))
		}
		for _, id := range need {
			revealed[id] = true
		}
		for _, ev := range append(slices.Clone(shared), relayOnly...) {
			if !revealed[ev.ID] {
				t.Fatalf("the anonymous reconciliation lacks note %s", ev.ID)
			}
		}
		for name, id := range map[string]string{"private channel message": secret.ID, "gift wrap": wrap.ID, "another community's event": elsewhere.ID} {
			if revealed[id] {
				t.Fatalf("the anonymous reconciliation reveals the %s", name)
			}
		}

		// Both directions converge with go-nostr's NegentropySync.
		local := newMemStore(append(slices.Clone(shared), clientOnly...)...)
		goNostrSync(t, local, tr.url, gonostr.Filter{Kinds: []int{1}})
		for _, ev := range relayOnly {
			if !local.has(ev.ID) {
				t.Fatalf("note %s was not downloaded", ev.ID)
			}
		}
		reader := tr.dial(t)
		got := ids(reader.Req("up", nostr.Filter{IDs: ids(clientOnly)}))
		if len(got) != len(clientOnly) {
			t.Fatalf("the relay holds %d of the %d uploaded notes", len(got), len(clientOnly))
		}
		if local.has(secret.ID) || local.has(wrap.ID) || local.has(elsewhere.ID) {
			t.Fatal("sync downloaded an event the reader may not read")
		}
		// Converged: a second reconciliation finds nothing either way.
		res, err := nip77.Reconcile(ctx, rawTransport{reader}, "again", []byte(`{"kinds":[1]}`), itemsOf(append(append(shared, relayOnly...), clientOnly...)), nip77.MinFrameBytes, nil)
		if err != nil || len(res.Have)+len(res.Need) != 0 {
			t.Fatalf("second reconciliation: have %d need %d, %v", len(res.Have), len(res.Need), err)
		}

		// Readers see what their REQ would: the member the private
		// message, alice her gift wrap, bob neither.
		m := tr.dial(t)
		m.AuthAs(member, tr.host)
		if got := negIDs(t, m, nostr.Filter{}); !slices.Contains(got, secret.ID) || slices.Contains(got, wrap.ID) {
			t.Fatal("the member's reconciliation lacks the private message or holds the gift wrap")
		}
		a := tr.dial(t)
		a.AuthAs(alice, tr.host)
		if got := negIDs(t, a, nostr.Filter{Kinds: []int{nostr.KindGiftWrap}}); !slices.Equal(got, []string{wrap.ID}) {
			t.Fatalf("alice's gift wraps = %v", got)
		}
		b := tr.dial(t)
		b.AuthAs(bob, tr.host)
		if got := negIDs(t, b, nostr.Filter{}); slices.Contains(got, secret.ID) || slices.Contains(got, wrap.ID) {
			t.Fatal("bob's reconciliation reveals the private message or alice's gift wrap")
		}
		// The other community reveals only its own.
		if got := negIDs(t, other, nostr.Filter{}); !slices.Equal(got, []string{elsewhere.ID}) {
			t.Fatalf("the other community's reconciliation = %v", got)
		}
		// A private channel named by an anonymous reader: refused as a REQ is.
		anon := tr.dial(t)
		anon.SendRaw(nip77.AppendOpen(nil, "p", hFilter(priv).AppendJSON(nil), "6100000200"))
		expectNegErr(t, anon, "p", "auth-required:")
	})
}

func itemsOf(evs []*nostr.Event) []nip77.Item {
	out := make([]nip77.Item, len(evs))
	for i, ev := range evs {
		out[i] = nip77.Item{CreatedAt: ev.CreatedAt, ID: ev.ID}
	}
	return out
}

// expectNegErr reads until NEG-ERR of sub and checks its reason's prefix.
func expectNegErr(t *testing.T, c *rawClient, sub, prefix string) string {
	t.Helper()
	for {
		raw, err := c.NextRaw()
		if err != nil {
			t.Fatalf("waiting for NEG-ERR %s: %v", sub, err)
		}
		m, ok := nip77.ParseRelayMessage(raw)
		if !ok {
			continue
		}
		e, isErr := m.(*nip77.Err)
		if !isErr || e.SubID != sub {
			t.Fatalf("got %s, want NEG-ERR %s", raw, sub)
		}
		if !strings.HasPrefix(e.Reason, prefix) {
			t.Fatalf("NEG-ERR %q, want prefix %q", e.Reason, prefix)
		}
		return e.Reason
	}
}

// expectNegMsg reads until NEG-MSG of sub.
func expectNegMsg(t *testing.T, c *rawClient, sub string) string {
	t.Helper()
	for {
		raw, err := c.NextRaw()
		if err != nil {
			t.Fatalf("waiting for NEG-MSG %s: %v", sub, err)
		}
		m, ok := nip77.ParseRelayMessage(raw)
		if !ok {
			continue
		}
		if msg, isMsg := m.(*nip77.Msg); isMsg && msg.SubID == sub {
			return msg.Message
		}
		t.Fatalf("got %s, want NEG-MSG %s", raw, sub)
	}
}

func TestNegentropyLimits(t *testing.T) {
	tr := newTestRelay(t, WithLimits(Limits{MaxNegentropyItems: 5, MaxNegentropySessions: 2}))
	c, s := tr.dial(t), newSigner(t)
	for i := range 6 {
		c.MustAccept(s.Event(1, now()-int64(i), fmt.Sprint(i)))
	}
	const initial = "6100000200" // an empty set's first message
	open := func(sub string, f nostr.Filter) {
		c.SendRaw(nip77.AppendOpen(nil, sub, f.AppendJSON(nil), initial))
	}
	// Six events match: too many.
	open("big", nostr.Filter{Kinds: []int{1}})
	eq(t, "too many", expectNegErr(t, c, "big", "blocked:"), "blocked: too many events to reconcile (limit 5); narrow the filter")
	// A limit within the cap is honoured: five events.
	open("five", nostr.Filter{Kinds: []int{1}, Limit: 5, LimitSet: true})
	expectNegMsg(t, c, "five")
	// Two sessions at once, not three; closing one frees its place.
	open("two", nostr.Filter{Authors: []string{s.Pub()}, Limit: 1, LimitSet: true})
	expectNegMsg(t, c, "two")
	open("three", nostr.Filter{Kinds: []int{1}, Limit: 1, LimitSet: true})
	expectNegErr(t, c, "three", "blocked: too many negentropy sessions")
	c.SendRaw(nip77.AppendClose(nil, "two"))
	open("three", nostr.Filter{Kinds: []int{1}, Limit: 1, LimitSet: true})
	expectNegMsg(t, c, "three")
	// A NEG-OPEN of an open id replaces it, taking no more room.
	open("three", nostr.Filter{Kinds: []int{1}, Limit: 2, LimitSet: true})
	expectNegMsg(t, c, "three")
	// Unknown, malformed, hostile.
	c.SendRaw(nip77.AppendMsg(nil, "nope", "61"))
	expectNegErr(t, c, "nope", "closed:")
	c.SendRaw([]byte(`["NEG-MSG","three","6"]`))
	expectNegErr(t, c, "three", "invalid:")
	c.SendRaw([]byte(`["NEG-OPEN","bad",{"kinds":"x"},"61"]`))
	expectNegErr(t, c, "bad", "invalid:")
	open("bad", nostr.Filter{Search: "words"})
	eq(t, "search", expectNegErr(t, c, "bad", "invalid:"), msgNegSearch)
	c.SendRaw([]byte(`["NEG-MSG","five","61000002ffffffff0f"]`)) // 2^35 ids stated, none sent
	expectNegErr(t, c, "five", "invalid:")
	c.SendRaw(nip77.AppendOpen(nil, strings.Repeat("x", 300), []byte(`{}`), initial))
	expectNegErr(t, c, strings.Repeat("x", 300), "invalid: subscription id too long")
	// The connection still serves REQs.
	if got := c.Req("still", nostr.Filter{Kinds: []int{1}}); len(got) != 6 {
		t.Fatalf("REQ after the refusals: %d events", len(got))
	}
}
