// Package trace is the relay side of the isolation conformance harness: a
// Tracer the relay calls at every tenant seam, a no-op implementation for
// production, a JSONL writer for tests, and an emit Guard that records a
// coverage breach when an armed seam returns without emitting.
//
// Each step is one JSON line, schema version 2:
//
//	{"schema_version":2,
//	 "action":{"type":"write_insert","msg_id":"d34db33fcafef00d","channel":"…uuid…","claimed_community":"…uuid…"},
//	 "state_after":{"resolved_community":"…uuid…","bound_host":"a.example","actor":"0123456789abcdef"}}
//
// state_after is projected, not raw: the community the server resolved from
// the host, the normalized host, and the first 16 hex digits of the
// authenticated pubkey (null before AUTH) — never the client's h tag, event
// payloads, keys or tokens. A claimed community (the community of the
// channel an h tag named, as looked up) is recorded apart from the resolved
// one so that "authorize by what the client claimed" is visible.
//
// One trace is one bound connection (or one HTTP request): every step of it
// has the same resolved community and host, which the checker verifies.
// This package imports only tenant and the standard library; the checker
// (conformance/checker) imports neither.
package trace

import (
	"context"
	"strings"

	"github.com/buzzrelay/buzz/tenant"
)

// SchemaVersion is the version of the step schema written here.
const SchemaVersion = 2

// Action types, as they appear in the "type" field.
const (
	ActionWriteInsert       = "write_insert"
	ActionWriteInsertGlobal = "write_insert_global"
	ActionAcceptEphemeral   = "accept_ephemeral"
	ActionWriteDuplicate    = "write_duplicate"
	ActionAuthCheck         = "auth_check"
	ActionReadMessageRows   = "read_message_rows"
	ActionReadByIDRows      = "read_by_id_rows"
	ActionReadHostFeedRows  = "read_host_feed_rows"
	ActionSanitizedError    = "sanitized_error"
	ActionImplBug           = "impl_bug"
)

// Reason is the class a client-visible error is reduced to.
type Reason string

// The closed alphabet of sanitized error reasons.
const (
	ReasonRestricted  Reason = "restricted"
	ReasonInvalid     Reason = "invalid"
	ReasonServerError Reason = "server_error"
)

// ReasonOf reduces a client-visible message (an OK, CLOSED or HTTP
// refusal) to the alphabet by its prefix: "error:" is a server error,
// "invalid:" and "pow:" are invalid, anything else is restricted.
func ReasonOf(msg string) Reason {
	switch {
	case strings.HasPrefix(msg, "error:"):
		return ReasonServerError
	case strings.HasPrefix(msg, "invalid:"), strings.HasPrefix(msg, "pow:"):
		return ReasonInvalid
	}
	return ReasonRestricted
}

// State is who is acting where: the tenant the connection is bound to and
// the authenticated pubkey ("" before AUTH). It becomes each step's
// state_after.
type State struct {
	Tenant tenant.TenantContext
	Actor  string // 64-hex pubkey, or "" when unauthenticated
}

// Tracer receives one step per tenant decision. Implementations must be safe
// for concurrent use and must not fail the caller: a trace only observes.
//
// Event ids (msgID) are recorded by their first 16 hex digits. A channel is
// its UUID text. claimed is the community the looked-up channel belongs to
// (the zero CommunityID when the lookup found none is recorded as the empty
// label, which the checker refuses on an allow or a write). rows lists the
// community of every row a read returned to the client, one entry per row,
// not de-duplicated.
type Tracer interface {
	// WriteInsert: a channel event was stored.
	WriteInsert(ctx context.Context, st State, msgID, channel string, claimed tenant.CommunityID)
	// WriteInsertGlobal: a community-wide (channel-less) event was stored.
	WriteInsertGlobal(ctx context.Context, st State, msgID string)
	// AcceptEphemeral: an ephemeral event was accepted for fan-out.
	AcceptEphemeral(ctx context.Context, st State)
	// WriteDuplicate: an event was answered as a duplicate.
	WriteDuplicate(ctx context.Context, st State, msgID string)
	// AuthCheck: access to channel was decided.
	AuthCheck(ctx context.Context, st State, channel string, claimed tenant.CommunityID, allow bool)
	// ReadMessageRows: a channel read returned rows.
	ReadMessageRows(ctx context.Context, st State, channel string, rows []tenant.CommunityID)
	// ReadByIDRows: a read by event id (ids, #e) returned rows.
	ReadByIDRows(ctx context.Context, st State, rows []tenant.CommunityID)
	// ReadHostFeedRows: a channel-less read of the host's feed returned rows.
	ReadHostFeedRows(ctx context.Context, st State, rows []tenant.CommunityID)
	// SanitizedError: an error was sent to the client.
	SanitizedError(ctx context.Context, st State, reason Reason)
	// ImplBug: the implementation broke its own tracing contract (kind says
	// how, e.g. "unemitted:ingest").
	ImplBug(ctx context.Context, st State, kind string)
}

// Noop is the production Tracer: it records nothing.
type Noop struct{}

var _ Tracer = Noop{}

func (Noop) WriteInsert(context.Context, State, string, string, tenant.CommunityID) {}
func (Noop) WriteInsertGlobal(context.Context, State, string)                       {}
func (Noop) AcceptEphemeral(context.Context, State)                                 {}
func (Noop) WriteDuplicate(context.Context, State, string)                          {}
func (Noop) AuthCheck(context.Context, State, string, tenant.CommunityID, bool)     {}
func (Noop) ReadMessageRows(context.Context, State, string, []tenant.CommunityID)   {}
func (Noop) ReadByIDRows(context.Context, State, []tenant.CommunityID)              {}
func (Noop) ReadHostFeedRows(context.Context, State, []tenant.CommunityID)          {}
func (Noop) SanitizedError(context.Context, State, Reason)                          {}
func (Noop) ImplBug(context.Context, State, string)                                 {}
