package buzz

import (
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

// typingWindow is Buzz's typing indicator window: a client shows a typing
// indicator for about this long, so one per channel per window is enough.
const typingWindow = 5 * time.Second

// msgTypingTooSoon refuses a second typing indicator for the same channel on
// the same connection within typingWindow; nothing is delivered.
const msgTypingTooSoon = "rate-limited: one typing indicator per channel every 5 seconds"

// admitTyping reserves this connection's slot for a typing indicator's
// channel: false when one was admitted for the same channel within
// typingWindow (by the relay's clock). Other kinds are always admitted. The
// map only keeps channels typed in within the window, so its size is bounded
// by what the connection's message rate lets through in one window.
func (c *conn) admitTyping(ev *nostr.Event) bool {
	if ev.Kind != nostr.KindTyping {
		return true
	}
	h := typingChannel(ev)
	if h == "" {
		return true // refused by ingest: no channel
	}
	now := c.r.cfg.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.typing[h]; ok && now.Sub(last) < typingWindow && !now.Before(last) {
		return false
	}
	if c.typing == nil {
		c.typing = make(map[string]time.Time)
	}
	for k, t := range c.typing {
		if now.Sub(t) >= typingWindow || now.Before(t) {
			delete(c.typing, k)
		}
	}
	c.typing[h] = now
	return true
}

// releaseTyping gives back the slot admitTyping reserved when ingest refused
// the event, so a refused indicator does not count against the window.
func (c *conn) releaseTyping(ev *nostr.Event) {
	if ev.Kind != nostr.KindTyping {
		return
	}
	if h := typingChannel(ev); h != "" {
		c.mu.Lock()
		delete(c.typing, h)
		c.mu.Unlock()
	}
}

// typingChannel is the channel a typing indicator names, or "" unless it
// has exactly one h tag (ingest refuses those; they take no slot).
func typingChannel(ev *nostr.Event) string {
	h, n := "", 0
	for _, t := range ev.Tags {
		if len(t) >= 1 && t[0] == "h" {
			n++
			if len(t) >= 2 {
				h = t[1]
			}
		}
	}
	if n != 1 {
		return ""
	}
	return h
}
