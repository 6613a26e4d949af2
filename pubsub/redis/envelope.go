package redis

import (
	"errors"
	"strings"

	"github.com/buzzrelay/buzz/tenant"
)

// The event envelope has a fixed layout that is also valid JSON:
//
//	{"v":1,"c":"<community uuid>","i":"<event id>","e":<raw event JSON>}
//
// The community and id come first, at fixed offsets, so a receiver can check
// the tenant and drop its own echo without parsing the event.
const (
	envPrefix     = `{"v":1,"c":"`
	envAfterComm  = `","i":"`
	envAfterID    = `","e":`
	envSuffix     = `}`
	uuidTextLen   = 36
	eventIDLen    = 64
	envHeaderLen  = len(envPrefix) + uuidTextLen + len(envAfterComm) + eventIDLen + len(envAfterID)
	envOverhead   = envHeaderLen + len(envSuffix)
	offCommunity  = len(envPrefix)
	offAfterComm  = offCommunity + uuidTextLen
	offID         = offAfterComm + len(envAfterComm)
	offAfterID    = offID + eventIDLen
	offRawPayload = envHeaderLen
)

var errEnvelope = errors.New("pubsub/redis: malformed event envelope")

// appendEnvelope appends the envelope of one event to dst.
func appendEnvelope(dst []byte, community tenant.CommunityID, id string, raw []byte) []byte {
	dst = append(dst, envPrefix...)
	dst = append(dst, community.String()...)
	dst = append(dst, envAfterComm...)
	dst = append(dst, id...)
	dst = append(dst, envAfterID...)
	dst = append(dst, raw...)
	return append(dst, envSuffix...)
}

// envelope is a decoded event envelope; its fields alias the input.
type envelope struct {
	community string // canonical UUID text
	id        string // 64 lowercase hex
	raw       string // the event JSON, not yet parsed
}

// parseEnvelope splits an envelope without copying. It checks the layout,
// that the id is 64 lowercase hex characters and that the raw event is
// non-empty; the event itself is parsed by the caller.
func parseEnvelope(s string) (envelope, error) {
	if len(s) <= envOverhead ||
		!strings.HasPrefix(s, envPrefix) ||
		s[offAfterComm:offID] != envAfterComm ||
		s[offAfterID:offRawPayload] != envAfterID ||
		!strings.HasSuffix(s, envSuffix) {
		return envelope{}, errEnvelope
	}
	id := s[offID:offAfterID]
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return envelope{}, errEnvelope
		}
	}
	return envelope{
		community: s[offCommunity:offAfterComm],
		id:        id,
		raw:       s[offRawPayload : len(s)-len(envSuffix)],
	}, nil
}
