package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
)

// Kind 9033 sets the community's workspace profile (Buzz's command): its
// "icon" tag is the community's icon, served as the NIP-11 icon of its
// hosts (store.CommunityProfile.Icon); an empty icon, or a 9033 without an
// icon tag, clears it. The community's owner and admins may send it. It is
// an authority event (applied once per community) and is executed, never
// stored.
//
// Differences from Buzz, refused rather than dropped: the icon must be an
// http(s) URL (Buzz also takes data:image URLs), and Buzz's
// "thread_replies_in_channel" display policy is not kept here.

// Messages of the workspace profile command (Buzz's words where it has
// them).
const (
	MsgWorkspaceNotAuthorized = "invalid: actor not authorized: must be admin or owner"
	MsgWorkspaceIconChars     = "invalid: icon contains invalid characters"
	MsgWorkspaceIconURL       = "invalid: icon must be an http(s) URL on this relay"
	msgWorkspaceIconLong      = "invalid: icon URL too long: %d bytes (max %d)"
	MsgWorkspaceThreadPolicy  = "invalid: thread_replies_in_channel is not supported on this relay"
	msgWorkspaceUnsupported   = "restricted: this relay does not keep a workspace profile"
)

// workspaceIcon returns the icon a 9033 sets ("" clears it), or the
// refusal.
func workspaceIcon(tags [][]string) (icon, refusal string) {
	for _, t := range tags {
		if len(t) >= 1 && t[0] == "thread_replies_in_channel" {
			return "", MsgWorkspaceThreadPolicy
		}
	}
	for _, t := range tags {
		if len(t) >= 2 && t[0] == "icon" {
			icon = t[1]
			break
		}
	}
	switch {
	case icon == "":
		return "", ""
	case strings.IndexFunc(icon, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return "", MsgWorkspaceIconChars
	case len(icon) > store.MaxProfileIcon:
		return "", fmt.Sprintf(msgWorkspaceIconLong, len(icon), store.MaxProfileIcon)
	}
	if (store.CommunityProfile{Icon: icon}).Validate() != nil {
		return "", MsgWorkspaceIconURL
	}
	return icon, ""
}

// applyWorkspaceProfile executes a 9033. ctx carries its authority mark.
func (p *Pipeline) applyWorkspaceProfile(ctx context.Context, s Submission) Outcome {
	cs := p.cfg.Channels
	var ps store.ProfileStore
	if cs != nil {
		ps, _ = cs.Store.(store.ProfileStore)
	}
	if ps == nil {
		return Outcome{Message: msgWorkspaceUnsupported}
	}
	ev, c := s.Event, s.Tenant.Community()
	tags := make([][]string, len(ev.Tags))
	for i, t := range ev.Tags {
		tags[i] = t
	}
	icon, refusal := workspaceIcon(tags)
	if refusal != "" {
		return Outcome{Message: refusal}
	}
	role, ok, err := cs.Store.CommunityRole(ctx, c, ev.PubKey)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: community role", "community", c.String(), "err", err)
		return Outcome{Message: MsgInternal}
	}
	if !ok || (role != channel.RoleOwner && role != channel.RoleAdmin) {
		return Outcome{Message: MsgWorkspaceNotAuthorized}
	}
	prof, err := ps.CommunityProfile(ctx, c)
	if err == nil {
		prof.Icon = icon
		err = ps.SetCommunityProfile(audit.WithActor(ctx, ev.PubKey), c, prof)
	}
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return Outcome{OK: true, Message: MsgDuplicate}
	case err != nil:
		p.cfg.Logger.ErrorContext(ctx, "ingest: workspace profile", "community", c.String(), "err", err)
		return Outcome{Message: MsgInternal}
	}
	return Outcome{OK: true}
}
