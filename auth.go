package buzz

import (
	"net/url"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// handleAuth verifies a NIP-42 AUTH event and, on success, adds its pubkey
// to the connection's authenticated pubkeys (a connection may authenticate
// as several pubkeys). It always answers with one OK. The event is never
// stored or published.
func (c *conn) handleAuth(ev *nostr.Event) {
	reason := c.checkAuth(ev)
	var grant *apitoken.Grant // the token's, when the event presents one
	if reason == "" {
		if token, has, bad := tokenOf(ev); bad != "" {
			reason = bad
		} else if has {
			grant, reason = c.authToken(ev, token)
		}
	}
	if reason == "" {
		reason = c.authBlocked(ev.PubKey) // a banned pubkey cannot authenticate
	}
	for _, fn := range c.r.cfg.onAuth {
		if reason != "" {
			break
		}
		if err := fn(c.ctx, c.tc, ev.PubKey); err != nil {
			reason = ingest.Reason(err, "restricted: ")
		}
	}
	if reason != "" {
		if c.tracer != nil {
			c.tracer.SanitizedError(c.ctx, c.traceState(), trace.ReasonOf(reason))
		}
		c.reply(nostr.AppendOK(nil, ev.ID, false, reason))
		return
	}
	c.mu.Lock()
	already := false
	for _, p := range c.authed {
		if p == ev.PubKey {
			already = true
			break
		}
	}
	// A pubkey authenticated with a token acts within its scopes until it
	// authenticates without one (the key alone may do anything); a second
	// token changes nothing.
	prev, limited := c.grants[ev.PubKey]
	switch {
	case grant != nil && !already:
		if c.grants == nil {
			c.grants = make(map[string]*apitoken.Grant)
		}
		c.grants[ev.PubKey] = grant
	case grant == nil && limited:
		delete(c.grants, ev.PubKey)
	}
	if !already {
		c.authed = append(c.authed, ev.PubKey)
	}
	c.mu.Unlock()
	// The channel reader learns of the pubkey once it may read: at once
	// without a token, when a token allows messages:read.
	canRead := func(g *apitoken.Grant) bool { return g == nil || g.Allows(apitoken.MessagesRead) }
	newReader := (!already && canRead(grant)) || (grant == nil && limited && !canRead(prev))
	if !already {
		pk := ev.PubKey
		c.actorPK.CompareAndSwap(nil, &pk)
	}
	if newReader {
		pk := ev.PubKey
		if c.reader != nil {
			// A new reader may read more channels. The set is recomputed
			// before the OK: every event published after the client sees
			// its AUTH accepted is judged with the new reader's rights, for
			// the subscriptions it opened before authenticating too. Until
			// then the previous set keeps answering (it only grows).
			c.reader.Authenticated(pk)
			if _, err := c.reader.Refresh(c.ctx); err != nil && c.ctx.Err() == nil {
				c.log.ErrorContext(c.ctx, "buzz: read access after AUTH", "err", err)
			}
		}
	}
	c.recordAgentOwner(ev)
	c.reply(nostr.AppendOK(nil, ev.ID, true, ""))
}

// checkAuth returns why ev does not authenticate this connection, or "".
//
// The event must be kind 22242 with a valid id and signature, created_at
// within ±AuthWindow of now, exactly one "challenge" tag equal to this
// connection's challenge and exactly one "relay" tag: a ws:// or wss://
// URL (the scheme of WithRelayURL, when given) whose host, normalized, is
// the host this connection was bound to.
func (c *conn) checkAuth(ev *nostr.Event) string {
	if ev.Kind != nostr.KindClientAuth {
		return "invalid: AUTH event must be kind 22242"
	}
	if err := c.r.cfg.verifier.Verify(ev); err != nil {
		return err.Error()
	}
	now := c.r.cfg.now().Unix()
	w := int64(c.limits.AuthWindow.Seconds())
	if ev.CreatedAt < now-w || ev.CreatedAt > now+w {
		return "invalid: AUTH event created_at is not within the allowed window"
	}
	challenges := ev.Tags.All("challenge")
	if len(challenges) != 1 || challenges[0][1] != c.challenge {
		return "invalid: AUTH event must carry exactly this connection's challenge"
	}
	relays := ev.Tags.All("relay")
	if len(relays) != 1 || !c.relayMatches(relays[0][1]) {
		return "invalid: AUTH event relay tag does not name this relay"
	}
	return ""
}

// relayMatches reports whether raw is a relay URL naming this connection's
// host.
func (c *conn) relayMatches(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return false
	}
	if s := c.r.cfg.relayScheme; s != "" && u.Scheme != s {
		return false
	}
	host, err := tenant.NormalizeHost(u.Host)
	return err == nil && host == c.tc.Host()
}
