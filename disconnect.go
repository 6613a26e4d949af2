package buzz

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/tenant"
)

// CloseCommunityGone is the WebSocket close code DisconnectCommunity sends:
// 1008 (policy violation), with the reason CloseCommunityGoneText. A client
// that reconnects gets the unmapped-host 404 once the community no longer
// resolves.
const (
	CloseCommunityGone     = websocket.ClosePolicyViolation
	CloseCommunityGoneText = "relay: community is no longer served"
)

// DisconnectCommunity closes every WebSocket of this relay bound to
// community c, for example after the community was archived, and ends
// every stream of c opened through Host.Subscribe (reason
// CloseCommunityGoneText). Each
// connection stops reading, finishes the EVENTs already being processed (so
// every acknowledged event gets its OK), sends what is queued and is closed
// with CloseCommunityGone. DisconnectCommunity returns once they are all
// closed; if ctx ends first it drops the remaining ones at once and returns
// ctx's error. Connections of other communities are untouched.
//
// It reaches only this process's sockets: a deployment with several relay
// processes must call it on each (for example from a broadcast). New
// upgrades are refused only once the directory stops resolving the host, so
// callers change the directory (and invalidate any cache) first; a
// connection that was bound just before that and registers while this call
// runs is caught by a second sweep.
func (r *Relay) DisconnectCommunity(ctx context.Context, c tenant.CommunityID) error {
	if c.IsZero() {
		return nil
	}
	// Seam streams end at once with the same text (Host.Subscribe).
	for _, s := range r.streamsOf(c) {
		s.end(CloseCommunityGoneText)
	}
	closed := make(map[*conn]bool)
	// Sweep until a pass finds no connection left to close: an upgrade
	// bound before the caller's directory change may register late.
	for pass := 0; ; pass++ {
		batch := r.connsOf(c, closed)
		if len(batch) == 0 && pass > 0 {
			return nil
		}
		for _, cn := range batch {
			closed[cn] = true
			cn.beginClose(CloseCommunityGone, CloseCommunityGoneText)
		}
		for _, cn := range batch {
			if ctx.Err() == nil {
				select {
				case <-cn.writerDone:
					continue
				case <-ctx.Done():
				}
			}
			for _, k := range batch {
				go k.closeNow(CloseCommunityGone, CloseCommunityGoneText)
			}
			return ctx.Err()
		}
		if len(batch) == 0 {
			// First pass found nothing: look once more after a short
			// pause, for an upgrade that was between Bind and registration.
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// connsOf returns the registered connections bound to c that are not in skip.
func (r *Relay) connsOf(c tenant.CommunityID, skip map[*conn]bool) []*conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*conn
	for cn := range r.conns {
		if cn.tc.Community() == c && !skip[cn] {
			out = append(out, cn)
		}
	}
	return out
}

// closeUnboundHosts closes, on this process, the connections of community
// bound through one of hosts when that host no longer selects the
// community (a removed host alias), with CloseCommunityGone. A host the
// directory cannot look up right now keeps its connections (logged).
func (r *Relay) closeUnboundHosts(ctx context.Context, community tenant.CommunityID, hosts []string) {
	for _, c := range r.sessionsOf(community) {
		host := c.host()
		if !slices.Contains(hosts, host) {
			continue
		}
		id, err := r.cfg.directory.LookupHost(ctx, host)
		switch {
		case err == nil && id == community:
			continue // still served
		case err != nil && !errors.Is(err, tenant.ErrUnmappedHost):
			r.log.WarnContext(ctx, "buzz: host lookup after a host change", "err", err)
			continue
		}
		c.disconnect(CloseCommunityGone, CloseCommunityGoneText)
	}
}
