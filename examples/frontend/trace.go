package main

import (
	"context"
	"net/http"
	"strings"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/tenant"
)

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

// checked records one channel decision of the read check.
func (rt readTrace) checked(id *channel.ID, ok bool) {
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
