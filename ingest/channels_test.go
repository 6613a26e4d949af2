package ingest

import (
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
)

// TestSanitize: the messages of ingest reduce to the reasons conformance
// traces expect.
func TestSanitize(t *testing.T) {
	for msg, want := range map[string]trace.Reason{
		MsgInternal: trace.ReasonServerError, channel.MsgBadChannelTag: trace.ReasonInvalid, channel.MsgChannelDenied: trace.ReasonRestricted,
		channel.MsgMembersOnlyAuth: trace.ReasonRestricted, MsgDeleted: trace.ReasonRestricted, "pow: difficulty 20": trace.ReasonInvalid,
		"rate-limited: slow down": trace.ReasonRestricted,
	} {
		if got := trace.ReasonOf(msg); got != want {
			t.Errorf("trace.ReasonOf(%q) = %q, want %q", msg, got, want)
		}
	}
}
