package buzz

import (
	"context"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

// Gift wraps (NIP-59 kind 1059) are p-gated: a stored or live gift wrap
// reaches a connection only when the connection has authenticated (NIP-42)
// as a pubkey its "p" tag names. Everyone else reads as if it did not
// exist — on REQ, COUNT and live delivery alike. The rule is package
// channel's (channel.GiftWrapQuery and its siblings), which every frontend
// shares:
//
//   - REQ: a filter asking for kind 1059 only is narrowed to "#p" ∩ the
//     connection's pubkeys before the store query (so limits count only the
//     reader's wraps); every other filter that could match a gift wrap has
//     the wraps it returns checked one by one, and those of others dropped.
//   - COUNT: the count of the filters, minus their gift wraps, plus their
//     gift wraps addressed to the reader.
//   - A REQ or COUNT whose every filter asks for kind 1059 only, before
//     AUTH, is closed with channel.MsgGiftWrapAuth.
//   - Live delivery: liveAllowed (channel.Reader.Deliverable applies the
//     rule).

// countVisible is count with the gift wrap rule (channel.CountGiftWrapped),
// counted as one bounded read.
func (c *conn) countVisible(ctx context.Context, filters []nostr.Filter, scope channel.Scope) (int64, error) {
	return channel.CountGiftWrapped(ctx, filters, c.readers(), func(ctx context.Context, sets [][]nostr.Filter) ([]int64, error) {
		return c.r.countBounded(ctx, c.tc.Community(), c, sets, scope)
	})
}
