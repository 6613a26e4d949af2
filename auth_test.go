package buzz

import (
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/fakeclock"
	"github.com/buzzrelay/buzz/nostr"
)

func (c *rawClient) authEvent(s *signer, createdAt int64, tags ...nostr.Tag) *nostr.Event {
	return s.Event(nostr.KindClientAuth, createdAt, "", tags...)
}

func TestAuthSuccessAndFailures(t *testing.T) {
	tr := newTestRelay(t, WithRelayURL("ws://relay.example"))
	c := tr.dial(t)
	s := newSigner(t)
	relayTag := nostr.Tag{"relay", tr.url} // ws://127.0.0.1:port: folds to localhost:port
	chTag := nostr.Tag{"challenge", c.Challenge}

	badSig := c.authEvent(s, now(), chTag, relayTag)
	badSig.Sig = strings.Repeat("0", 128)

	other := tr.dial(t) // a different connection has a different challenge
	if other.Challenge == c.Challenge {
		t.Fatal("two connections got the same challenge")
	}

	failures := map[string]*nostr.Event{
		"wrong challenge":   c.authEvent(s, now(), nostr.Tag{"challenge", other.Challenge}, relayTag),
		"no challenge":      c.authEvent(s, now(), relayTag),
		"two challenges":    c.authEvent(s, now(), chTag, chTag, relayTag),
		"wrong relay host":  c.authEvent(s, now(), chTag, nostr.Tag{"relay", "ws://evil.example"}),
		"wrong relay port":  c.authEvent(s, now(), chTag, nostr.Tag{"relay", tr.url + "1"}),
		"wss not ws":        c.authEvent(s, now(), chTag, nostr.Tag{"relay", "wss" + strings.TrimPrefix(tr.url, "ws")}),
		"http scheme":       c.authEvent(s, now(), chTag, nostr.Tag{"relay", "http" + strings.TrimPrefix(tr.url, "ws")}),
		"no relay":          c.authEvent(s, now(), chTag),
		"stale created_at":  c.authEvent(s, now()-61, chTag, relayTag),
		"future created_at": c.authEvent(s, now()+300, chTag, relayTag), // far past the 60 s window, so a slow machine cannot bring it inside
		"wrong kind":        s.Event(1, now(), "", chTag, relayTag),
		"bad sig":           badSig,
	}
	for name, ev := range failures {
		ok := c.Auth(ev)
		if ok.OK || !strings.HasPrefix(ok.Message, "invalid:") {
			t.Fatalf("%s: OK %v %q, want OK false invalid:", name, ok.OK, ok.Message)
		}
	}
	if c.relayConn(tr).authenticated() {
		t.Fatal("authenticated after failures only")
	}

	// Success: loopback alias and a trailing slash are fine.
	good := c.authEvent(s, now()-30, chTag, nostr.Tag{"relay", strings.Replace(tr.url, "127.0.0.1", "localhost", 1) + "/"})
	ok := c.Auth(good)
	if !ok.OK {
		t.Fatalf("AUTH refused: %q", ok.Message)
	}
	// A second pubkey may authenticate too.
	s2 := newSigner(t)
	if ok := c.Auth(c.authEvent(s2, now(), chTag, relayTag)); !ok.OK {
		t.Fatalf("second AUTH refused: %q", ok.Message)
	}
	rc := c.relayConn(tr)
	if !rc.isAuthed(s.Pub()) || !rc.isAuthed(s2.Pub()) {
		t.Fatal("pubkeys not recorded")
	}
	// AUTH events are never stored.
	eq(t, "stored 22242", len(c.Req("q", nostr.Filter{Kinds: []int{nostr.KindClientAuth}})), 0)
}

// relayConn finds the relay side of c (the only connection whose challenge
// matches).
func (c *rawClient) relayConn(tr *testRelay) *conn {
	c.T.Helper()
	tr.relay.mu.Lock()
	defer tr.relay.mu.Unlock()
	for rc := range tr.relay.conns {
		if rc.challenge == c.Challenge {
			return rc
		}
	}
	c.T.Fatal("connection not found")
	return nil
}

func TestAuthRequiredFlows(t *testing.T) {
	tr := newTestRelay(t, WithAuth(AuthRequired))
	c := tr.dial(t)
	s := newSigner(t)
	ev := s.Event(1, now(), "hi")

	c.SendEvent(ev)
	// The challenge is sent again, then the OK.
	if m, ok := c.Next().(*nostr.AuthChallengeMessage); !ok || m.Challenge != c.Challenge {
		t.Fatalf("got %#v, want the AUTH challenge again", m)
	}
	ok := c.ExpectOK(ev.ID)
	eq(t, "unauthenticated EVENT ok", ok.OK, false)
	mustPrefix(t, "unauthenticated EVENT", ok.Message, "auth-required:")

	c.SendRaw(nostr.AppendReq(nil, "r", nostr.Filter{}))
	c.ExpectClosed("r", "auth-required:")
	c.SendRaw(nostr.AppendCount(nil, "n", nostr.Filter{}))
	c.ExpectClosed("n", "auth-required:")

	if ok := c.Auth(c.authEvent(s, now(), nostr.Tag{"challenge", c.Challenge}, nostr.Tag{"relay", tr.url})); !ok.OK {
		t.Fatalf("AUTH refused: %q", ok.Message)
	}
	c.MustAccept(ev)
	// Authenticated, but not as this event's author.
	ok = c.Publish(newSigner(t).Event(1, now(), "someone else"))
	eq(t, "foreign author ok", ok.OK, false)
	mustPrefix(t, "foreign author", ok.Message, "restricted:")
	if got := c.Req("r", nostr.Filter{}); len(got) != 1 {
		t.Fatalf("REQ after AUTH = %d events, want 1", len(got))
	}

	doc := tr.relay.NIP11Document()
	eq(t, "auth_required", doc.Limitation.AuthRequired, true)
	eq(t, "restricted_writes", doc.Limitation.RestrictedWrites, true)
}

func TestAuthWindowUsesClock(t *testing.T) {
	clock := fakeclock.New(time.Now().Add(-time.Hour))
	tr := newTestRelay(t, WithClock(clock.Now))
	c := tr.dial(t)
	s := newSigner(t)
	tags := []nostr.Tag{{"challenge", c.Challenge}, {"relay", tr.url}}
	if ok := c.Auth(c.authEvent(s, now(), tags...)); ok.OK {
		t.Fatal("AUTH an hour ahead of the relay clock accepted")
	}
	if ok := c.Auth(c.authEvent(s, clock.Now().Unix()+59, tags...)); !ok.OK {
		t.Fatalf("AUTH within the window refused: %q", ok.Message)
	}
}
