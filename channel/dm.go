package channel

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/buzzrelay/buzz/nostr"
)

// DM conversations, as Buzz has them.
//
// A DM conversation is a channel of type dm whose members are its
// participants (2 to MaxDMParticipants, the opener included), all with role
// member: private, closed, restricted and hidden, so only its participants
// read it, post in it, or see its state events, and nobody can join it or
// change its members by the NIP-29 commands (no participant is owner or
// admin). Its participant set never changes: adding participants opens
// another conversation.
//
// Its id is derived from its participant set (DMID): the same participants
// open the same conversation in a community, and a second open finds it.
// The id space is reserved (IsDMID): a 9007 cannot create a channel there,
// so nobody can take a conversation's id before it is opened.
//
// Each participant has a hidden flag of their own (41012 sets it, opening
// the conversation again clears it); the relay publishes each viewer's
// hidden set as a DM visibility snapshot (kind 30622, VisibilitySnapshot),
// readable by that viewer alone (nostr.IsPGated).

// MaxDMParticipants bounds a conversation's participants, its opener
// included (Buzz: 8 others and the opener).
const MaxDMParticipants = 9

// Refusals of DM commands, in Buzz's words.
const (
	MsgDMNoParticipants = "invalid: pubkeys must contain at least 1 other participant"
	MsgDMTooManyOthers  = "invalid: pubkeys may contain at most 8 other participants (9 total)"
	MsgDMTooLarge       = "invalid: DM supports at most 9 participants"
	MsgDMMissingH       = "invalid: missing h tag (channel_id)"
	MsgDMAddNone        = "invalid: must specify at least 1 new participant in p tags"
	MsgDMNotDM          = "invalid: channel is not a DM"
	MsgDMNotFound       = "invalid: DM not found"
	msgDMBadPubkey      = "invalid: bad pubkey hex: %s"
	// MsgDMVisibilityRelaySigned refuses a client's 30622.
	MsgDMVisibilityRelaySigned = "invalid: DM visibility snapshots are relay-signed only"
)

// dmKeyLabel domain-separates conversation ids.
const dmKeyLabel = "buzz/dm-participants/v1\x00"

// dmMarker starts every conversation id (IsDMID).
var dmMarker = [4]byte{0xd3, 0x11, 0xc0, 0x0d}

// DMID returns the id of the conversation of participants (64 lowercase
// hex pubkeys, in any order, repeats ignored): a version 8 UUID starting
// with a fixed marker, followed by 90 bits of SHA-256 of the sorted set.
func DMID(participants []string) ID {
	ps := slices.Clone(participants)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	h := sha256.New()
	h.Write([]byte(dmKeyLabel))
	for _, p := range ps {
		h.Write([]byte(p))
	}
	var id ID
	copy(id[:], h.Sum(nil))
	copy(id[:4], dmMarker[:])
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // RFC 9562 variant
	return id
}

// IsDMID reports whether id lies in the space DMID draws from (a 9007
// may not create a channel there).
func IsDMID(id ID) bool {
	return [4]byte(id[:4]) == dmMarker && id[6]&0xf0 == 0x80 && id[8]&0xc0 == 0x80
}

// DMCommandPubkeys returns the values of ev's "p" tags, in order, or the
// refusal of the first that is not a 64 lowercase hex pubkey.
func DMCommandPubkeys(ev *nostr.Event) (pubkeys []string, refusal string) {
	for _, t := range ev.Tags {
		if len(t) == 0 || t[0] != "p" {
			continue
		}
		if len(t) < 2 || !nostr.IsLowerHex(t[1], 64) {
			v := ""
			if len(t) >= 2 {
				v = t[1]
			}
			return nil, fmt.Sprintf(msgDMBadPubkey, v)
		}
		pubkeys = append(pubkeys, t[1])
	}
	return pubkeys, ""
}

// DMOpenParticipants returns the participants a 41010 opens a
// conversation with: its author and the pubkeys of its "p" tags, sorted
// and distinct; or Buzz's refusal — no other participant, more than 8 "p"
// tags, a malformed pubkey.
func DMOpenParticipants(ev *nostr.Event) (participants []string, refusal string) {
	others, refusal := DMCommandPubkeys(ev)
	switch {
	case refusal != "":
		return nil, refusal
	case len(others) == 0:
		return nil, MsgDMNoParticipants
	case len(others) > MaxDMParticipants-1:
		return nil, MsgDMTooManyOthers
	}
	participants = SortedParticipants(append(others, ev.PubKey))
	if len(participants) < 2 {
		return nil, MsgDMNoParticipants
	}
	return participants, ""
}

// SortedParticipants returns ps sorted, without repeats.
func SortedParticipants(ps []string) []string {
	out := slices.Clone(ps)
	slices.Sort(out)
	return slices.Compact(out)
}

// DMName is the name Buzz gives a new conversation of n participants.
func DMName(n int) string {
	if n == 2 {
		return "DM"
	}
	return fmt.Sprintf("Group DM (%d)", n)
}

// DMNotices returns the relay's notices of a conversation actor created
// with participants, unsigned and without created_at (the caller signs
// them with the community's state key): with system (a 41010), the system
// message {"type":"dm_created","actor":…,"participants":[…]} in the
// conversation; then a membership notification (44100) to every
// participant, the actor included.
func DMNotices(ch Channel, actor string, participants []string, system bool) []*nostr.Event {
	h := nostr.Tag{"h", ch.GroupID()}
	var out []*nostr.Event
	if system {
		b, _ := json.Marshal(struct {
			Type         string   `json:"type"`
			Actor        string   `json:"actor"`
			Participants []string `json:"participants"`
		}{"dm_created", actor, participants}) // strings only: cannot fail
		out = append(out, &nostr.Event{Kind: nostr.KindSystemMessage, Tags: nostr.Tags{h}, Content: string(b)})
	}
	for _, p := range participants {
		out = append(out, &nostr.Event{Kind: nostr.KindMemberAdded, Tags: nostr.Tags{{"p", p}, h}})
	}
	return out
}

// VisibilitySnapshot returns viewer's DM visibility snapshot (kind 30622)
// listing the conversations hidden, unsigned and without created_at: tags
// d and p = viewer, then one h per hidden conversation. The latest
// snapshot is the whole hidden set.
func VisibilitySnapshot(viewer string, hidden []ID) *nostr.Event {
	tags := nostr.Tags{{"d", viewer}, {"p", viewer}}
	for _, id := range hidden {
		tags = append(tags, nostr.Tag{"h", id.String()})
	}
	return &nostr.Event{Kind: nostr.KindDMVisibility, Tags: tags, Content: ""}
}
