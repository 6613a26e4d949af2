package ingest

import (
	"context"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

// Gift wraps (NIP-59 kind 1059) are signed by a throwaway key, never by
// the person who sends them, so "authenticated as the author" cannot hold
// for them. A gift wrap submitted by a connection that authenticated
// (NIP-42) but not as the wrap's signer is admitted as the connection's:
// the authentication policy, bans and timeouts, the community's access
// policy and the rate limit all judge the connection's first authenticated
// key (Submission.Actor), so rotating throwaway keys escapes none of them.
// The signature is still verified, and every other check applies as to any
// event. A gift wrap names exactly one recipient (one "p" tag); in a
// members-only community the recipient must be a member.

// Messages of the gift wrap rules.
const (
	MsgGiftWrapRecipient    = "invalid: a gift wrap (kind 1059) must have exactly one p tag naming its recipient"
	MsgGiftWrapNonRecipient = "restricted: the recipient of this gift wrap is not a member of this community"
)

// principal is the key admission judges the submission as: the event's
// author, or, for a gift wrap its connection did not authenticate as the
// signer of, the connection's first authenticated key.
func principal(s Submission) string {
	ev := s.Event
	if ev.Kind == nostr.KindGiftWrap && s.AuthedAs != nil && s.Actor != "" &&
		!s.AuthedAs(ev.PubKey) && s.AuthedAs(s.Actor) {
		return s.Actor
	}
	return ev.PubKey
}

// giftWrapRecipient returns the one recipient a gift wrap names, or false
// when it names none, several, or one that is not a pubkey.
func giftWrapRecipient(ev *nostr.Event) (string, bool) {
	recipient := ""
	for _, t := range ev.Tags {
		if len(t) < 1 || t[0] != "p" {
			continue
		}
		if recipient != "" || len(t) < 2 || !nostr.IsLowerHex(t[1], 64) {
			return "", false
		}
		recipient = t[1]
	}
	return recipient, recipient != ""
}

// admitGiftWrapRecipient refuses a gift wrap, in a members-only community,
// addressed to someone who is not a member: "" when it is admitted. The
// sender has already been admitted as a member, so the refusal tells it
// nothing a member could not learn.
func (p *Pipeline) admitGiftWrapRecipient(ctx context.Context, s Submission) (string, error) {
	if s.Event.Kind != nostr.KindGiftWrap || p.cfg.Channels == nil {
		return "", nil
	}
	recipient, ok := giftWrapRecipient(s.Event)
	if !ok { // refused at step 3b already
		return MsgGiftWrapRecipient, nil
	}
	c := s.Tenant.Community()
	pol, err := p.cfg.Channels.Access.Policy(ctx, c)
	if err != nil || pol != channel.AccessMembers {
		return "", err
	}
	member, err := p.cfg.Channels.Access.IsCommunityMember(ctx, c, recipient)
	if err != nil {
		return "", err
	}
	if !member {
		return MsgGiftWrapNonRecipient, nil
	}
	return "", nil
}
