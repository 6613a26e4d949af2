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

// Direct messages and seals (NIP-04, NIP-17, NIP-59); the gift wrap,
// KindGiftWrap, is above (never searchable: IsSearchable).
const (
	KindDirectMessage  = 4  // NIP-04 encrypted direct message (superseded by NIP-17)
	KindSeal           = 13 // NIP-59 seal: a rumor encrypted to its recipient, signed by its author
	KindPrivateMessage = 14 // NIP-17 chat message: the unsigned rumor inside a seal
)

// KindPresence is the ephemeral kind a client announces its presence with
// (content "online", "away", "offline", or JSON {"status": …}); Buzz.
const KindPresence = 20001

// KindTyping is the ephemeral typing indicator (Buzz): it names exactly one
// channel with an h tag and reaches only that channel's readers.
const KindTyping = 20002

// Community membership and moderation (Buzz; see package ingest). The
// owner and admins add and remove members and change roles; moderators
// ban, time out and resolve reports. Reports (NIP-56) are queued, never
// stored as events.
const (
	KindReport                = 1984 // NIP-56 report
	KindAddCommunityMember    = 9030
	KindRemoveCommunityMember = 9031
	KindChangeCommunityRole   = 9032
	// KindWorkspaceProfile sets the community's workspace profile (Buzz's
	// 9033: its icon).
	KindWorkspaceProfile = 9033
	KindBan              = 9040
	KindUnban            = 9041
	KindTimeout          = 9042
	KindUntimeout        = 9043
	KindResolveReport    = 9044
)

// NIP-43 relay access metadata: the membership a community announces,
// signed by the community's relay key (the NIP-11 "self" of its hosts), and
// the member's leave request.
const (
	// KindMembershipAdded (8000) announces a member added: p = the member.
	KindMembershipAdded = 8000
	// KindMembershipRemoved (8001) announces a member removed.
	KindMembershipRemoved = 8001
	// KindMembershipList (13534, replaceable) lists every member.
	KindMembershipList = 13534
	// KindLeaveRelay (28936, ephemeral) is a member's request to leave.
	KindLeaveRelay = 28936
)

// Kinds package ingest validates.
const (
	// KindRepository is a NIP-34 repository announcement (addressable).
	KindRepository = 30617
	// KindProject is a NIP-MP multi-repository project (addressable): a
	// named group of kind 30617 coordinates, possibly of several owners.
	KindProject = 30621
)

// Workflow kinds (Buzz; see package workflow).
const (
	// KindDefinition is a workflow definition event.
	KindDefinition = 30620
	// Status events, published relay-signed into the workflow's channel.
	KindRunTriggered  = 46001
	KindStepStarted   = 46002
	KindStepCompleted = 46003
	KindStepFailed    = 46004
	KindRunCompleted  = 46005
	KindRunFailed     = 46006
	KindRunCancelled  = 46007
	// Approvals: the relay publishes 46010 when a run asks for approval and
	// 46011/46012 when it is granted/denied; an approver grants with 46030
	// and denies with 46031 (d = approval id, h = channel).
	KindApprovalRequested = 46010
	KindApprovalGranted   = 46011
	KindApprovalDenied    = 46012
	KindApprovalGrant     = 46030
	KindApprovalDeny      = 46031
	// KindManualTrigger is a by-hand run request; the relay passes it to
	// the engine's TriggerManual.
	KindManualTrigger = 46020
)

// IsSearchable reports whether events of kind k can match a NIP-50 search:
// every kind except the p-gated kinds (IsPGated: gift wraps, membership
// notifications) and the author-only kinds (IsAuthorOnly).
func IsSearchable(k int) bool { return !IsPGated(k) && !IsAuthorOnly(k) }

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

// KindProductFeedback is a client's product feedback for the relay's
// operator: kept apart (store.FeedbackStore), never stored as an event.
const KindProductFeedback = 42000
