package store

import (
	"context"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// DMStore keeps DM conversations (see package channel: DMID, the hidden
// flag of each participant). Every call is scoped by community: a
// conversation of one community does not exist in another. Writes honour
// the Authority mark of their context like every write (a replay returns
// ErrDuplicate and changes nothing). Both backends implement it.
type DMStore interface {
	// OpenDM opens the conversation of participants (2 to
	// channel.MaxDMParticipants sorted, distinct 64 lowercase hex pubkeys,
	// actor among them) in c, atomically: when c holds no channel
	// channel.DMID(participants), it creates it (type dm, private, closed,
	// restricted, hidden, named channel.DMName, created by actor at
	// createdAt) with every participant a member (role member), and
	// reports created; when it holds that conversation, it makes actor a
	// member again if actor had left, and clears actor's hidden flag. A
	// deleted conversation, or a channel of that id that is not a DM,
	// is channel.ErrNoChannel; a malformed participant set
	// channel.ErrInvalidCommand. ch is the conversation after the call.
	OpenDM(ctx context.Context, c tenant.CommunityID, actor string, participants []string, createdAt int64) (ch channel.Channel, created bool, err error)
	// HideDM sets viewer's hidden flag on conversation id of c:
	// channel.ErrNoChannel when c holds no live conversation id,
	// channel.ErrNotMember when viewer is not one of its members.
	HideDM(ctx context.Context, c tenant.CommunityID, id channel.ID, viewer string) error
	// HiddenDMs returns the live conversations of c viewer is a member of
	// and has hidden, sorted by id.
	HiddenDMs(ctx context.Context, c tenant.CommunityID, viewer string) ([]channel.ID, error)
}

// DMParticipants decodes a participant set as DMStore.OpenDM takes it: 2
// to channel.MaxDMParticipants sorted, distinct 64-character lowercase hex
// pubkeys, actor among them. ok is false, and keys nil, when the set is
// malformed or actor is not in it.
func DMParticipants(actor string, participants []string) (keys [][]byte, ok bool) {
	if len(participants) < 2 || len(participants) > channel.MaxDMParticipants {
		return nil, false
	}
	keys = make([][]byte, 0, len(participants))
	hasActor := false
	for i, p := range participants {
		b, ok := nostr.DecodeHex32(p)
		if !ok || i > 0 && participants[i-1] >= p {
			return nil, false
		}
		hasActor = hasActor || p == actor
		keys = append(keys, b)
	}
	if !hasActor {
		return nil, false
	}
	return keys, true
}
