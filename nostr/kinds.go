package nostr

// Kinds with protocol-level meaning.
const (
	KindProfile     = 0
	KindNote        = 1
	KindContacts    = 3
	KindDeletion    = 5     // NIP-09 deletion request
	KindGiftWrap    = 1059  // NIP-59 gift wrap; readable by its p-tagged recipient only (see channel.GiftWrapVisible)
	KindClientAuth  = 22242 // NIP-42 AUTH; never stored
	KindHTTPAuth    = 27235 // NIP-98 HTTP auth; never stored
	MaxKind         = 65535
	ephemeralLow    = 20000
	ephemeralHigh   = 29999
	replaceableLow  = 10000
	replaceableHigh = 19999
	addressableLow  = 30000
	addressableHigh = 39999
)

// Channel kinds (NIP-29 groups, as Buzz has them; see package channel for
// what each command does and who may send it).
const (
	KindChatMessage     = 9     // a channel message; requires h
	KindPutUser         = 9000  // NIP-29 put-user
	KindRemoveUser      = 9001  // NIP-29 remove-user
	KindEditMetadata    = 9002  // NIP-29 edit-metadata
	KindDeleteEvent     = 9005  // NIP-29 delete-event
	KindCreateChannel   = 9007  // NIP-29 create-group
	KindDeleteChannel   = 9008  // NIP-29 delete-group
	KindCreateInvite    = 9009  // NIP-29 create-invite
	KindJoinRequest     = 9021  // NIP-29 join-request
	KindLeaveRequest    = 9022  // NIP-29 leave-request
	KindChannelMetadata = 39000 // relay-signed group metadata
	KindChannelAdmins   = 39001 // relay-signed group admins
	KindChannelMembers  = 39002 // relay-signed group members
	KindChannelRoles    = 39003 // relay-signed group roles
)

// IsEphemeral reports whether events of kind k are delivered live and never
// stored (20000–29999).
func IsEphemeral(k int) bool { return k >= ephemeralLow && k <= ephemeralHigh }

// IsReplaceable reports whether only the newest event of kind k per author is
// kept (0, 3 and 10000–19999).
func IsReplaceable(k int) bool {
	return k == KindProfile || k == KindContacts || (k >= replaceableLow && k <= replaceableHigh)
}

// IsAddressable reports whether only the newest event of kind k per author and
// "d" tag value is kept (30000–39999).
func IsAddressable(k int) bool { return k >= addressableLow && k <= addressableHigh }
