package nostr

// Relay-signed notices (Buzz): signed by the community's state key.
const (
	// KindSystemMessage narrates a channel's state in the channel:
	// content {"type": "member_joined" | "member_left" | "member_removed"
	// | "channel_renamed", "actor": …, "target" or "name": …}, tag h.
	KindSystemMessage = 40099
	// KindMemberAdded and KindMemberRemoved tell a user they were added to
	// or removed from a channel: tags p (the user) and h (the channel),
	// readable only by that user (IsPGated), never by the channel.
	KindMemberAdded   = 44100
	KindMemberRemoved = 44101
)

// IsPGated reports whether events of kind k are readable only by a reader
// their "p" tag names: gift wraps and membership notifications. They
// never match a search (IsSearchable).
func IsPGated(k int) bool {
	return k == KindGiftWrap || k == KindMemberAdded || k == KindMemberRemoved
}
