package buzz

import (
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

// Buzz's presence bound: a connection may announce its presence
// (kind 20001) presenceBurst times per presenceWindow; a fixed window, by
// the relay's clock, as Buzz's per-kind ephemeral limiter.
const (
	presenceWindow = time.Second
	presenceBurst  = 5
)

// msgEphemeralTooFast refuses a presence announcement over the bound (Buzz's
// text); nothing is recorded or delivered.
const msgEphemeralTooFast = "rate-limited: ephemeral kind rate exceeded; retry in 1s"

// msgPresenceHTTP refuses a presence announcement over HTTP (Buzz's text):
// presence belongs to a connection, whose close clears it.
const msgPresenceHTTP = "invalid: presence is only accepted via WebSocket"

// presenceBudget is one connection's presence window.
type presenceBudget struct {
	start time.Time // when the current window began
	n     int       // announcements admitted or refused in it
}

// admitPresence charges a presence announcement to this connection's window:
// false when presenceBurst were already sent in it. Every announcement is
// charged, refused ones included, as Buzz does. Other kinds are always
// admitted.
func (c *conn) admitPresence(ev *nostr.Event) bool {
	if ev.Kind != nostr.KindPresence {
		return true
	}
	now := c.r.cfg.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	b := &c.presence
	if b.start.IsZero() || now.Sub(b.start) >= presenceWindow || now.Before(b.start) {
		b.start, b.n = now, 0
	}
	b.n++
	return b.n <= presenceBurst
}
