package ingest

import (
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/pubsub/control"
)

// ControlMessages are the control messages (package pubsub/control) that
// tell the other processes of a deployment about ch, a committed channel
// command's Change as Channels.OnChange receives it, so each process
// applies it to its own connections as the one that ran the command did:
// a VisibilityChanged when everyone may have lost access (deletion, open →
// private), a MembershipChanged per user who lost membership, and
// otherwise, when access may only have widened (members or roles changed,
// an open channel's metadata changed, perhaps private → open), one
// MembershipChanged without pubkey, which only drops cached access. A
// change that touched no access (a 9005 event deletion) has none.
//
// Every frontend whose OnChange runs in a deployment of several processes
// publishes them on its control bus, as the relay does. (It lives here
// because package control depends only on tenant and package channel
// imports no pubsub package.)
func ControlMessages(ch channel.Change) []control.Message {
	id := ch.Channel.ID.String()
	var out []control.Message
	if ch.Deleted || ch.BecamePrivate {
		out = append(out, control.VisibilityChanged{Channel: id})
	}
	for _, pk := range ch.Revoked {
		out = append(out, control.MembershipChanged{Channel: id, PubKey: pk})
	}
	widened := ch.Members || (ch.Metadata && ch.Channel.Visibility != channel.VisibilityPrivate)
	if len(out) == 0 && widened {
		out = append(out, control.MembershipChanged{Channel: id})
	}
	return out
}
