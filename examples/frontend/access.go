package main

import (
	"context"
	"net/http"
	"strings"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/tenant"
)

// Read access: the one place the frontend decides what a reader may read.
// access decides a read before the store is asked; visible judges every
// event, stored or live, by the scope access returned; a stream applies a
// channel or membership change by running access again (see recheck).

// The relay's read refusals.
const (
	msgChannelAuth      = "auth-required: authenticate (NIP-42) to read this channel"
	msgChannelRevoked   = "restricted: channel access revoked"
	msgCommunityRevoked = "restricted: community access revoked"
)

// access decides a read of flt by readers (the pubkeys the request
// authenticated as) in tc's community: a members-only community admits its
// members only; a filter whose "#h" names no channel readers may read
// (unknown, another community's, private without membership: all alike) is
// refused. It returns the scope of the read — community-wide events and
// the readable channels — or the relay's refusal. checked, when not nil,
// sees each channel "#h" names with its verdict (nil: no valid id).
func (f *frontend) access(ctx context.Context, tc tenant.TenantContext, readers []string, flt *nostr.Filter, checked func(id *channel.ID, ok bool)) (channel.Scope, string, error) {
	c := tc.Community()
	pol, err := f.cfg.Store.CommunityAccess(ctx, c)
	if err != nil {
		return channel.Scope{}, "", err
	}
	if pol == channel.AccessMembers {
		member := false
		for _, pk := range readers {
			_, ok, err := f.cfg.Store.CommunityRole(ctx, c, pk)
			if err != nil {
				return channel.Scope{}, "", err
			}
			member = member || ok
		}
		switch {
		case len(readers) == 0:
			return channel.Scope{}, ingest.MsgMembersOnlyAuth, nil
		case !member:
			return channel.Scope{}, ingest.MsgMembersOnly, nil
		}
	}
	ids, err := f.cfg.Store.ReadableChannels(ctx, c, readers)
	if err != nil {
		return channel.Scope{}, "", err
	}
	scope := channel.ScopeOf(ids...)
	vals, has := flt.Tags["h"]
	if !has || vals == nil {
		return scope, "", nil
	}
	readable, valid := false, false
	for _, v := range vals {
		id, ok := channel.ParseID(v)
		if !ok {
			continue
		}
		in := scope.Contains(id)
		readable, valid = readable || in, true
		if checked != nil {
			checked(&id, in)
		}
	}
	if readable {
		return scope, "", nil
	}
	if !valid && checked != nil {
		checked(nil, false)
	}
	if len(readers) == 0 {
		return channel.Scope{}, msgChannelAuth, nil
	}
	return channel.Scope{}, ingest.MsgChannelDenied, nil
}

// visible reports whether ev may reach a reader with scope: community-wide
// events and the events of its channels; never a gift wrap (NIP-59 kind
// 1059, readable by its recipient only: this frontend does not serve them).
func visible(scope channel.Scope, ev *nostr.Event) bool {
	if ev.Kind == 1059 {
		return false
	}
	id, has, err := channel.OfEvent(ev)
	return err == nil && (!has || scope.Contains(id))
}

// revoked is the reason a stream ends with when a recheck refused it.
func revoked(reason string, err error) string {
	switch {
	case err != nil:
		return ingest.MsgInternal
	case reason == ingest.MsgMembersOnly || reason == ingest.MsgMembersOnlyAuth:
		return msgCommunityRevoked
	}
	return msgChannelRevoked
}

// readTrace records one read's isolation conformance trace
// (Config.Tracer). Its zero value records nothing.
type readTrace struct {
	g  *trace.Guard
	st trace.State
	tc tenant.TenantContext
}

func (f *frontend) arm(tc tenant.TenantContext, readers []string) readTrace {
	if f.cfg.Tracer == nil {
		return readTrace{}
	}
	st := trace.State{Tenant: tc, Actor: actor(readers)}
	return readTrace{g: trace.Arm(f.cfg.Tracer(tc), st, "read"), st: st, tc: tc}
}

// channel records one channel decision of access.
func (rt readTrace) channel(id *channel.ID, ok bool) {
	ctx := context.Background()
	switch {
	case id == nil:
		rt.g.AuthCheck(ctx, rt.st, "", tenant.CommunityID{}, false)
	case ok:
		rt.g.AuthCheck(ctx, rt.st, id.String(), rt.tc.Community(), true)
	default:
		rt.g.AuthCheck(ctx, rt.st, id.String(), tenant.CommunityID{}, false)
	}
}

// refuse records and answers a refusal.
func (rt readTrace) refuse(ctx context.Context, w http.ResponseWriter, reason string) {
	r := trace.ReasonRestricted
	switch {
	case strings.HasPrefix(reason, "error:"):
		r = trace.ReasonServerError
	case strings.HasPrefix(reason, "invalid:"):
		r = trace.ReasonInvalid
	}
	rt.g.SanitizedError(ctx, rt.st, r)
	refuse(w, reason)
}

// rows records the communities of the rows a filter's read returned, at
// the seam its shape names: by id, one channel's messages, or the feed.
func (rt readTrace) rows(ctx context.Context, f *nostr.Filter, rows []tenant.CommunityID) {
	if rt.g == nil {
		return
	}
	hs := f.Tags["h"]
	id, oneChannel := channel.ID{}, false
	if len(hs) == 1 {
		id, oneChannel = channel.ParseID(hs[0])
	}
	switch {
	case len(f.IDs) > 0 || f.Tags["e"] != nil:
		rt.g.ReadByIDRows(ctx, rt.st, rows)
	case oneChannel:
		rt.g.ReadMessageRows(ctx, rt.st, id.String(), rows)
	default:
		rt.g.ReadHostFeedRows(ctx, rt.st, rows)
	}
}

// live records one live event sent.
func (rt readTrace) live(ctx context.Context, m pubsub.Message) {
	if rt.g == nil {
		return
	}
	rows := []tenant.CommunityID{m.Community}
	if id, has, err := channel.OfEvent(m.Event); err == nil && has {
		rt.g.ReadMessageRows(ctx, rt.st, id.String(), rows)
		return
	}
	rt.g.ReadHostFeedRows(ctx, rt.st, rows)
}
