package channel

import (
	"encoding/json"

	"github.com/buzzrelay/buzz/nostr"
)

// Relay-signed notices, as Buzz publishes them.
//
// A change to a channel's members or name is narrated in the channel by a
// system message (kind 40099, tag h, content a JSON object):
//
//	{"type":"member_joined","actor":<who>,"target":<who joined>}   9021, 9000 of a non-member
//	{"type":"member_left","actor":<who left>}                     9022 of a member
//	{"type":"member_removed","actor":<who>,"target":<who>}         9001 of a member
//	{"type":"channel_renamed","actor":<who>,"name":<new name>}     9002 with a name
//
// and the user another added or removed is told by a membership
// notification (44100 added, 44101 removed; tags p = the user, h = the
// channel; empty content), read by that user alone (nostr.IsPGated) and
// community-wide (OfEvent), so a removed user still reads it.

// systemContent is a system message's content.
type systemContent struct {
	Type   string  `json:"type"`
	Actor  string  `json:"actor"`
	Target string  `json:"target,omitempty"`
	Name   *string `json:"name,omitempty"`
}

// Notices returns the relay's notices of change made by cmd, unsigned and
// without created_at (the caller signs them with the community's state
// key): system messages first, then membership notifications. None for a
// deleted channel.
func Notices(change Change, cmd *Command) []*nostr.Event {
	if cmd == nil || change.Deleted {
		return nil
	}
	h := nostr.Tag{"h", change.Channel.GroupID()}
	var out []*nostr.Event
	system := func(c systemContent) {
		b, _ := json.Marshal(c) // strings only: cannot fail
		out = append(out, &nostr.Event{Kind: nostr.KindSystemMessage, Tags: nostr.Tags{h}, Content: string(b)})
	}
	notify := func(kind int, user string) {
		out = append(out, &nostr.Event{Kind: kind, Tags: nostr.Tags{{"p", user}, h}})
	}
	switch cmd.Kind {
	case nostr.KindJoinRequest, nostr.KindPutUser:
		for _, u := range change.Added {
			system(systemContent{Type: "member_joined", Actor: cmd.Actor, Target: u})
		}
		if cmd.Kind == nostr.KindPutUser {
			for _, u := range change.Added {
				if u != cmd.Actor {
					notify(nostr.KindMemberAdded, u)
				}
			}
		}
	case nostr.KindLeaveRequest:
		for _, u := range change.Removed {
			system(systemContent{Type: "member_left", Actor: u})
		}
	case nostr.KindRemoveUser:
		for _, u := range change.Removed {
			system(systemContent{Type: "member_removed", Actor: cmd.Actor, Target: u})
			if u != cmd.Actor {
				notify(nostr.KindMemberRemoved, u)
			}
		}
	case nostr.KindEditMetadata:
		if cmd.Name != nil && change.Metadata {
			system(systemContent{Type: "channel_renamed", Actor: cmd.Actor, Name: cmd.Name})
		}
	}
	return out
}
