package buzz

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/tenant"
)

// memPresence records presence calls (the relay's consumer-side interface;
// the Redis implementation is tested in pubsub/redis).
type memPresence struct {
	mu     sync.Mutex
	status map[string]string // community/pubkey → status
	clears int
}

func (p *memPresence) SetPresence(_ context.Context, c tenant.CommunityID, pk, status string, _ time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status == nil {
		p.status = map[string]string{}
	}
	p.status[c.String()+"/"+pk] = status
	return nil
}

func (p *memPresence) ClearPresence(_ context.Context, c tenant.CommunityID, pk string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.status, c.String()+"/"+pk)
	p.clears++
	return nil
}

func (p *memPresence) get(c tenant.CommunityID, pk string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.status[c.String()+"/"+pk]
	return s, ok
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRelayRateLimit(t *testing.T) {
	l, err := ratelimit.NewMemory(ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassEvent: {Limit: 2, Window: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTestRelay(t, WithRateLimiter(l))
	c := tr.dial(t)
	s := newSigner(t)
	c.MustAccept(s.Event(1, now(), "one"))
	c.MustAccept(s.Event(1, now(), "two"))
	over := s.Event(1, now(), "three")
	ok := c.Publish(over)
	if ok.OK {
		t.Fatal("third event accepted over a limit of 2")
	}
	mustPrefix(t, "over quota", ok.Message, "rate-limited: ")
	if got := c.Req("q", nostr.Filter{IDs: []string{over.ID}}); len(got) != 0 {
		t.Fatal("a refused event was stored")
	}
	c.MustAccept(newSigner(t).Event(1, now(), "another author"))

	if _, err := New(WithStore(tr.store), WithDirectory(tr.store), WithRateLimiter(nil)); err == nil {
		t.Fatal("WithRateLimiter(nil) accepted")
	}
}

func TestPresenceRecordedAndCleared(t *testing.T) {
	p := &memPresence{}
	// Each close is fully handled (presence cleared or kept) before the
	// relay runs its disconnect hooks: the hook is the test's barrier.
	closed := make(chan struct{}, 2)
	tr := newTestRelay(t, WithPresence(p), WithOnDisconnect(func(context.Context, tenant.TenantContext) { closed <- struct{}{} }))
	s := newSigner(t)
	c1, c2 := tr.dial(t), tr.dial(t)
	c1.MustAccept(s.Event(nostr.KindPresence, now(), "online"))
	if st, _ := p.get(tr.tc.Community(), s.Pub()); st != "online" {
		t.Fatalf("presence after an online announcement = %q", st)
	}
	c2.MustAccept(s.Event(nostr.KindPresence, now(), `{"status":"away"}`))
	if st, _ := p.get(tr.tc.Community(), s.Pub()); st != "away" {
		t.Fatalf("presence after a JSON announcement = %q", st)
	}
	// Not a presence status: accepted (it is a valid ephemeral event) but
	// not recorded.
	c2.MustAccept(s.Event(nostr.KindPresence, now(), "{not json"))
	if st, _ := p.get(tr.tc.Community(), s.Pub()); st != "away" {
		t.Fatalf("presence after malformed content = %q", st)
	}

	// The first of two announcing connections closes: the status stays.
	_ = c1.WS.Close()
	awaitSignal(t, closed, "the close handled")
	if _, ok := p.get(tr.tc.Community(), s.Pub()); !ok {
		t.Fatal("presence cleared while another connection of the pubkey is open")
	}
	// The last one closes: cleared.
	_ = c2.WS.Close()
	awaitSignal(t, closed, "the close handled")
	if _, ok := p.get(tr.tc.Community(), s.Pub()); ok {
		t.Fatal("presence kept after the last announcing connection closed")
	}
}

func TestControlMessages(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	hook := func(c tenant.CommunityID, m control.Message) {
		mu.Lock()
		seen = append(seen, c.String()+" "+m.Type())
		mu.Unlock()
	}
	var all []string
	tr := newTestRelay(t, WithPresence(&memPresence{}), WithAccessChangeHook(hook),
		WithControlHook(func(_ tenant.CommunityID, m control.Message) {
			mu.Lock()
			all = append(all, m.Type())
			mu.Unlock()
		}))
	ctx := context.Background()
	const other = "other.example"
	if _, _, err := tr.store.EnsureCommunity(ctx, other); err != nil {
		t.Fatal(err)
	}
	otherTC, err := tenant.Bind(ctx, tr.store, other)
	if err != nil {
		t.Fatal(err)
	}

	// Membership and visibility changes reach the hooks, with their community.
	if err := tr.relay.PublishControl(ctx, tr.tc.Community(), control.MembershipChanged{Channel: "c1", PubKey: strings.Repeat("a", 64)}); err != nil {
		t.Fatal(err)
	}
	if err := tr.relay.PublishControl(ctx, otherTC.Community(), control.VisibilityChanged{Channel: "c2"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Join(seen, ",")
	mu.Unlock()
	want := tr.tc.Community().String() + " membership_changed," + otherTC.Community().String() + " visibility_changed"
	if got != want {
		t.Fatalf("access hooks saw %q, want %q", got, want)
	}

	// DisconnectPubkey closes the connections that authenticated as the
	// pubkey or announced its presence, in that community only.
	banned := newSigner(t)
	authed := tr.dial(t)
	if ok := authed.Auth(authed.authEvent(banned, now(), nostr.Tag{"challenge", authed.Challenge}, nostr.Tag{"relay", tr.url})); !ok.OK {
		t.Fatalf("AUTH refused: %s", ok.Message)
	}
	announced := tr.dial(t)
	announced.MustAccept(banned.Event(nostr.KindPresence, now(), "online"))
	bystander := tr.dial(t)
	elsewhere := dialHost(t, tr, other)
	if err := tr.relay.PublishControl(ctx, otherTC.Community(), control.DisconnectPubkey{PubKey: banned.Pub()}); err != nil {
		t.Fatal(err)
	}
	// Nothing of community A was touched by a message for community B.
	bystander.MustAccept(newSigner(t).Event(1, now(), "still here"))
	authed.MustAccept(banned.Event(1, now(), "still here too"))

	if err := tr.relay.PublishControl(ctx, tr.tc.Community(), control.DisconnectPubkey{PubKey: banned.Pub(), Reason: "banned"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*rawClient{"authenticated": authed, "announced": announced} {
		code, text := closeCode(t, c.WS)
		if code != websocket.ClosePolicyViolation || text != "banned" {
			t.Fatalf("%s connection closed with %d %q, want 1008 \"banned\"", name, code, text)
		}
	}
	bystander.MustAccept(newSigner(t).Event(1, now(), "unaffected"))

	// DisconnectCommunity closes every connection of the community.
	if err := tr.relay.PublishControl(ctx, otherTC.Community(), control.DisconnectCommunity{}); err != nil {
		t.Fatal(err)
	}
	if code, _ := closeCode(t, elsewhere); code != CloseCommunityGone {
		t.Fatalf("community connection closed with %d, want %d", code, CloseCommunityGone)
	}
	bystander.MustAccept(newSigner(t).Event(1, now(), "still unaffected"))
	mu.Lock()
	gotAll := strings.Join(all, ",")
	mu.Unlock()
	if wantAll := "membership_changed,visibility_changed,disconnect_pubkey,disconnect_pubkey,disconnect_community"; gotAll != wantAll {
		t.Fatalf("control hook saw %q, want %q", gotAll, wantAll)
	}
}

// flakyBroker is the in-process broker with an injectable readiness.
type flakyBroker struct {
	*pubsub.Local
	mu  sync.Mutex
	err error
}

func (b *flakyBroker) Ready(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func (b *flakyBroker) set(err error) {
	b.mu.Lock()
	b.err = err
	b.mu.Unlock()
}

func getHealth(t *testing.T, tr *testRelay, path, host string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, tr.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s Content-Type %q", path, ct)
	}
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func TestHealthEndpoints(t *testing.T) {
	local, err := pubsub.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	br := &flakyBroker{Local: local}
	tr := newTestRelay(t, WithBroker(br))
	tr.relay.Mux().Handle("GET "+HealthzPath, tr.relay.HealthzHandler())
	tr.relay.Mux().Handle("GET "+ReadyzPath, tr.relay.ReadyzHandler())

	for _, host := range []string{tr.host, "unmapped.example"} {
		if code, body := getHealth(t, tr, HealthzPath, host); code != 200 || body["status"] != "ok" {
			t.Fatalf("healthz on %s: %d %v", host, code, body)
		}
		code, body := getHealth(t, tr, ReadyzPath, host)
		if code != 200 || body["status"] != "ready" {
			t.Fatalf("readyz on %s: %d %v", host, code, body)
		}
	}

	br.set(errors.New("redis: connection refused 10.0.0.1:6379"))
	code, body := getHealth(t, tr, ReadyzPath, tr.host)
	checks, _ := body["checks"].(map[string]any)
	if code != 503 || body["status"] != "degraded" || checks["broker"] != "unavailable" || checks["store"] != "ok" {
		t.Fatalf("readyz with the broker down: %d %v", code, body)
	}
	if strings.Contains(strings.ToLower(fmtBody(body)), "10.0.0.1") {
		t.Fatal("readyz leaked the failure's cause")
	}
	var nre *NotReadyError
	if err := tr.relay.Ready(context.Background()); !errors.As(err, &nre) || nre.Dependency != "broker" {
		t.Fatalf("Ready with the broker down = %v", err)
	}
	if code, _ := getHealth(t, tr, HealthzPath, tr.host); code != 200 {
		t.Fatal("liveness failed because a dependency is down")
	}
	br.set(nil)
	if code, _ := getHealth(t, tr, ReadyzPath, tr.host); code != 200 {
		t.Fatal("readyz did not recover")
	}

	// Store gone.
	_ = tr.store.Close()
	code, body = getHealth(t, tr, ReadyzPath, tr.host)
	checks, _ = body["checks"].(map[string]any)
	if code != 503 || checks["store"] != "unavailable" {
		t.Fatalf("readyz with the store closed: %d %v", code, body)
	}

	// Shutdown: not ready, then not live.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.relay.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	code, body = getHealth(t, tr, ReadyzPath, tr.host)
	checks, _ = body["checks"].(map[string]any)
	if code != 503 || checks["relay"] != "shutting down" {
		t.Fatalf("readyz after Shutdown: %d %v", code, body)
	}
	if code, body := getHealth(t, tr, HealthzPath, tr.host); code != 503 || body["status"] != "stopped" {
		t.Fatalf("healthz after Shutdown: %d %v", code, body)
	}
}

func fmtBody(b map[string]any) string {
	out, _ := json.Marshal(b)
	return string(out)
}
