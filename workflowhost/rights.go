package workflowhost

import (
	"context"
	"errors"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// A workflow acts with its owner's rights as they are at the moment it
// acts: the engine asks OwnerMay before every run and resumption (a
// message or reaction trigger, a scheduled fire, a webhook delivery, a
// manual 46020, a run resumed after a delay or an approval), before every
// step, and when a definition is stored. The rule, in order:
//
//  1. The owner is neither banned from the community nor timed out in it
//     (a timeout forbids writing, and a workflow acts by writing).
//  2. In a members-only community (channel.AccessMembers), the owner is a
//     community member.
//  3. The channel exists and the owner is an active member of it.
//  4. The step's right (workflow.Right): RightPost — the owner may post
//     there (channel.MayPost, what admission applies to a kind 9);
//     RightMetadata — the owner may send a 9002 to the channel
//     (channel.Authorize, the store's command rule); RightAdmin — the
//     owner is a channel owner or admin (call_webhook); RightDM and
//     RightRun need nothing more.
//
// Every answer is read from the store, uncached, so every process decides
// alike at once after a ban, timeout, removal or role change made on any
// of them. A refused run fails with workflow.CodeOwnerUnauthorized in its
// trace and takes no effect; a refused webhook delivery answers exactly
// like an unknown hook.

// Refusals OwnerMay writes into run traces.
const (
	rightsBlocked      = "the workflow's owner is banned or timed out in this community"
	rightsNotMember    = "the workflow's owner is not a member of this members-only community"
	rightsNoChannel    = "the workflow's channel no longer exists"
	rightsNotInChannel = "the workflow's owner is not a member of the channel"
	rightsNoPost       = "the workflow's owner may not post in the channel"
	rightsNoMetadata   = "the workflow's owner may not edit the channel's metadata (9002)"
	rightsNoAdmin      = "the workflow's owner is not an owner or admin of the channel"
)

// OwnerMay implements workflow.OwnerRights: the one rule of what a
// workflow's owner may do when the workflow acts (see above).
func (h *engineSide) OwnerMay(ctx context.Context, c tenant.CommunityID, ch channel.ID, owner string, right workflow.Right) (string, error) {
	if h.mod != nil {
		rs, err := h.mod.PubkeyRestrictions(ctx, c, owner, h.h.Now())
		if err != nil {
			return "", err
		}
		if ingest.BlockedMessage(rs, true) != "" {
			return rightsBlocked, nil
		}
	}
	cs := h.channels
	pol, err := cs.CommunityAccess(ctx, c)
	if err != nil {
		return "", err
	}
	if pol == channel.AccessMembers {
		_, member, err := cs.CommunityRole(ctx, c, owner)
		if err != nil {
			return "", err
		}
		if !member {
			return rightsNotMember, nil
		}
	}
	chn, err := cs.Channel(ctx, c, ch)
	if errors.Is(err, channel.ErrNoChannel) {
		return rightsNoChannel, nil
	}
	if err != nil {
		return "", err
	}
	role, member, err := cs.ChannelRole(ctx, c, ch, owner)
	if err != nil {
		return "", err
	}
	if !member || chn.Deleted {
		return rightsNotInChannel, nil
	}
	switch right {
	case workflow.RightPost:
		if !channel.MayPost(chn, role, member) {
			return rightsNoPost, nil
		}
	case workflow.RightMetadata:
		cmd := channel.Command{Kind: nostr.KindEditMetadata, Channel: ch, Actor: owner}
		if channel.Authorize(&cmd, channel.CommandState{Channel: chn, ActorRole: role}) != nil {
			return rightsNoMetadata, nil
		}
	case workflow.RightAdmin:
		if role != channel.RoleOwner && role != channel.RoleAdmin {
			return rightsNoAdmin, nil
		}
	}
	return "", nil
}
