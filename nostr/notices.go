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
	// KindDMVisibility is a viewer's hidden DM conversations (Buzz's
	// NIP-DV snapshot, addressable): tags d and p = the viewer, one h per
	// conversation the viewer hid. Readable only by that viewer
	// (IsPGated), community-wide despite its h tags.
	KindDMVisibility = 30622
)

// DM conversation commands (Buzz): a client opens a conversation with
// the participants its p tags name, adds participants to one (h), or
// hides one (h) from its own listing. The relay executes them; they are
// never stored.
const (
	KindDMOpen      = 41010
	KindDMAddMember = 41011
	KindDMHide      = 41012
)

// IsPGated reports whether events of kind k are readable only by a reader
// their "p" tag names: gift wraps, membership notifications and DM
// visibility snapshots. They never match a search (IsSearchable).
func IsPGated(k int) bool {
	return k == KindGiftWrap || k == KindMemberAdded || k == KindMemberRemoved || k == KindDMVisibility
}
