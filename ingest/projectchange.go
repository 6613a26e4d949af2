package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// KindProjectChange is NIP-PC's project change (Buzz's kind 47010): a
// compare-and-swap on a project's related channels against the revision
// the author last saw. It is an authority event (authenticated author,
// fresh) and is applied at most once per community.
const KindProjectChange = 47010

// maxProjectD bounds the d of the project a change names (NIP-MP: 1024
// bytes).
const maxProjectD = 1024

// Refusals of a project change, Buzz's texts.
const (
	MsgProjectChangeTags     = "invalid: Project change must contain exactly an a tag and expected-revision tag"
	MsgProjectChangeMalform  = "invalid: Project change tags are malformed"
	MsgProjectCoordinate     = "invalid: a tag must contain a canonical Project coordinate"
	MsgProjectOwner          = "invalid: Project owner must be 64 lowercase hexadecimal characters"
	MsgProjectD              = "invalid: Project d tag is empty or too long"
	MsgProjectRevision       = "invalid: expected-revision must be a canonical positive integer"
	MsgProjectRevisionRange  = "invalid: expected-revision is out of range"
	MsgProjectVersion        = "invalid: unsupported Project change version"
	MsgProjectPatchTooBig    = "invalid: related-channel patch exceeds 64 entries"
	MsgProjectChannelID      = "invalid: related channels must be canonical UUIDs or NIP-29 group ids"
	MsgProjectEmpty          = "invalid: Project change must not be empty"
	MsgProjectDuplicate      = "invalid: Project change contains a duplicate channel"
	MsgProjectAddRemove      = "invalid: Project change adds and removes the same channel"
	MsgProjectNotFound       = "invalid: Project not found"
	MsgProjectForbidden      = "restricted: actor cannot manage this Project"
	MsgProjectUnsupported    = "blocked: this relay keeps no Project state"
	msgProjectConflict       = "conflict: Project revision is %d"
	msgProjectApplied        = "revision: %d"
	msgProjectDuplicateApply = "duplicate: already applied at revision %d"
)

// ProjectChange is a parsed kind 47010.
type ProjectChange struct {
	Owner, D    string
	Expected    int64
	Add, Remove []string
}

// ParseProjectChange reads a kind 47010 as Buzz does: exactly an a tag
// naming a kind 30621 coordinate and an expected-revision tag (each of
// exactly two elements), and the strict version 1 content
// {"v":1,"patch":{"related_channels":{"add":[…],"remove":[…]}}} (unknown
// fields refused) whose add and remove are distinct, disjoint channel ids,
// at most 64 each, not both empty. The error's text is the OK message.
func ParseProjectChange(ev *nostr.Event) (ProjectChange, error) {
	var pc ProjectChange
	if len(ev.Tags) != 2 {
		return pc, errors.New(MsgProjectChangeTags)
	}
	var haveA, haveRev bool
	for _, t := range ev.Tags {
		switch {
		case len(t) == 2 && t[0] == "a" && !haveA:
			owner, d, err := parseProjectCoordinate(t[1])
			if err != nil {
				return pc, err
			}
			pc.Owner, pc.D, haveA = owner, d, true
		case len(t) == 2 && t[0] == "expected-revision" && !haveRev:
			rev, err := parseRevision(t[1])
			if err != nil {
				return pc, err
			}
			pc.Expected, haveRev = rev, true
		default:
			return pc, errors.New(MsgProjectChangeMalform)
		}
	}
	var body struct {
		V     *int `json:"v"`
		Patch *struct {
			RelatedChannels *struct {
				Add    *[]string `json:"add"`
				Remove *[]string `json:"remove"`
			} `json:"related_channels"`
		} `json:"patch"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(ev.Content)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return pc, fmt.Errorf("invalid: Project change content: %v", err)
	}
	if dec.More() {
		return pc, errors.New("invalid: Project change content: trailing data")
	}
	switch {
	case body.V == nil:
		return pc, errors.New("invalid: Project change content: missing field `v`")
	case body.Patch == nil:
		return pc, errors.New("invalid: Project change content: missing field `patch`")
	case body.Patch.RelatedChannels == nil:
		return pc, errors.New("invalid: Project change content: missing field `related_channels`")
	case body.Patch.RelatedChannels.Add == nil:
		return pc, errors.New("invalid: Project change content: missing field `add`")
	case body.Patch.RelatedChannels.Remove == nil:
		return pc, errors.New("invalid: Project change content: missing field `remove`")
	}
	if *body.V != 1 {
		return pc, errors.New(MsgProjectVersion)
	}
	pc.Add, pc.Remove = *body.Patch.RelatedChannels.Add, *body.Patch.RelatedChannels.Remove
	for _, side := range [][]string{pc.Add, pc.Remove} {
		if len(side) > store.MaxRelatedChannels {
			return pc, errors.New(MsgProjectPatchTooBig)
		}
		for _, id := range side {
			if _, ok := channel.ParseID(id); !ok {
				return pc, errors.New(MsgProjectChannelID)
			}
		}
	}
	if len(pc.Add) == 0 && len(pc.Remove) == 0 {
		return pc, errors.New(MsgProjectEmpty)
	}
	add := make(map[string]bool, len(pc.Add))
	for _, id := range pc.Add {
		if add[id] {
			return pc, errors.New(MsgProjectDuplicate)
		}
		add[id] = true
	}
	remove := make(map[string]bool, len(pc.Remove))
	for _, id := range pc.Remove {
		if remove[id] {
			return pc, errors.New(MsgProjectDuplicate)
		}
		remove[id] = true
	}
	for id := range remove {
		if add[id] {
			return pc, errors.New(MsgProjectAddRemove)
		}
	}
	return pc, nil
}

// parseProjectCoordinate splits "30621:<owner>:<d>" on its first two
// colons (d may hold more).
func parseProjectCoordinate(v string) (owner, d string, err error) {
	kind, rest, ok1 := cut(v)
	owner, d, ok2 := cut(rest)
	if !ok1 || !ok2 || kind != strconv.Itoa(nostr.KindProject) {
		return "", "", errors.New(MsgProjectCoordinate)
	}
	if !nostr.IsLowerHex(owner, 64) {
		return "", "", errors.New(MsgProjectOwner)
	}
	if d == "" || len(d) > maxProjectD {
		return "", "", errors.New(MsgProjectD)
	}
	return owner, d, nil
}

func cut(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// parseRevision reads a canonical positive integer: digits only, no
// leading zero, within int64.
func parseRevision(s string) (int64, error) {
	if s == "" || s[0] == '0' {
		return 0, errors.New(MsgProjectRevision)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New(MsgProjectRevision)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New(MsgProjectRevisionRange)
	}
	return n, nil
}

// applyProjectChange is step 9” for kind 47010: it finds the project's
// current kind 30621 in the community, authorizes the author (the
// project's owner, or an owner or admin of the project's home channel, its
// buzz-channel tag) and applies the change in the store's transaction. It
// returns the outcome to answer now (done) or, when the change was
// applied, the OK message to answer once the event is stored.
func (p *Pipeline) applyProjectChange(ctx context.Context, s Submission) (out Outcome, done bool) {
	ev, c := s.Event, s.Tenant.Community()
	pc, err := ParseProjectChange(ev)
	if err != nil {
		return Outcome{Message: err.Error()}, true
	}
	if p.cfg.Projects == nil {
		return Outcome{Message: MsgProjectUnsupported}, true
	}
	fail := func(what string, err error) (Outcome, bool) {
		p.cfg.Logger.ErrorContext(ctx, "ingest: project change: "+what, "community", c.String(), "err", err)
		return Outcome{Message: MsgInternal}, true
	}
	f := nostr.Filter{Kinds: []int{nostr.KindProject}, Authors: []string{pc.Owner}, Tags: map[string][]string{"d": {pc.D}}, Limit: 1, LimitSet: true}
	var identity *nostr.Event
	for rec, err := range p.cfg.Store.Query(ctx, c, f) {
		if err != nil {
			return fail("project lookup", err)
		}
		if identity, err = nostr.ParseEvent(rec.Raw); err != nil {
			return fail("project lookup", err)
		}
	}
	if identity == nil {
		return Outcome{Message: MsgProjectNotFound}, true
	}
	ch := store.ProjectChange{EventID: ev.ID, Owner: pc.Owner, D: pc.D, Identity: identity.ID,
		Expected: pc.Expected, Add: pc.Add, Remove: pc.Remove}
	for _, t := range identity.Tags {
		switch {
		case len(t) >= 2 && t[0] == "buzz-channel" && ch.Home == "":
			ch.Home = t[1]
		case len(t) >= 2 && t[0] == "buzz-related-channel":
			if _, ok := channel.ParseID(t[1]); ok {
				ch.Related = append(ch.Related, t[1])
			}
		}
	}
	if ev.PubKey != pc.Owner {
		ok, err := p.homeAdmin(ctx, s, ch.Home)
		if err != nil {
			return fail("home channel role", err)
		}
		if !ok {
			return Outcome{Message: MsgProjectForbidden}, true
		}
	}
	res, err := p.cfg.Projects.ApplyProjectChange(ctx, c, ch)
	if err != nil {
		return fail("apply", err)
	}
	switch res.Status {
	case store.ProjectChangeApplied:
		return Outcome{OK: true, Message: fmt.Sprintf(msgProjectApplied, res.Revision)}, false
	case store.ProjectChangeDuplicate:
		return Outcome{OK: true, Message: fmt.Sprintf(msgProjectDuplicateApply, res.Revision)}, true
	case store.ProjectChangeConflict:
		return Outcome{Message: fmt.Sprintf(msgProjectConflict, res.Revision)}, true
	default:
		return Outcome{Message: "invalid: " + res.Reason}, true
	}
}

// homeAdmin reports whether the submission's author is an owner or admin
// of the project's home channel in the submission's community.
func (p *Pipeline) homeAdmin(ctx context.Context, s Submission, home string) (bool, error) {
	if home == "" || p.cfg.Channels == nil {
		return false, nil
	}
	id, ok := channel.ParseID(home)
	if !ok {
		return false, nil
	}
	role, ok, err := p.cfg.Channels.Access.Role(ctx, s.Tenant.Community(), id, s.Event.PubKey)
	if err != nil || !ok {
		return false, err
	}
	return role == channel.RoleOwner || role == channel.RoleAdmin, nil
}
