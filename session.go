package buzz

import (
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/tenant"
)

// session is a client's live reads bound to one community, as access
// changes reach them: a WebSocket connection (conn) or a stream a feature
// opened through the seam (Stream, Host.Subscribe). Every revocation — a
// channel deleted or made private, a member removed from a channel or from
// a members-only community, a policy change, a ban, a disconnect, an
// archive — is applied to the sessions of its community by one loop
// (revokeChannel, revokeMember, policyChanged in access.go;
// restrictionChanged in moderation.go; disconnectPubkey and the control
// messages in cluster.go; DisconnectCommunity in disconnect.go), whatever
// kind of session they are.
type session interface {
	// community is the community the session is bound to.
	community() tenant.CommunityID
	// host is the host the session was bound through.
	host() string
	// channelReader is the session's channel read access (see access.go);
	// nil without channels.
	channelReader() *channel.Reader
	// mayHold reports whether the session's cached readable set holds
	// channel id, or one of its subscriptions names it.
	mayHold(id channel.ID) bool
	// closeSubsNaming ends, with reason, the subscriptions that name
	// channel id in an "#h" filter.
	closeSubsNaming(id channel.ID, reason string)
	// failAllSubs ends every open subscription with reason.
	failAllSubs(reason string)
	// isAuthed reports whether the client authenticated as pubkey.
	isAuthed(pubkey string) bool
	// disconnect ends the whole session: a connection is closed
	// gracefully with code and reason, a stream ends with reason.
	disconnect(code int, reason string)
}

func (c *conn) community() tenant.CommunityID    { return c.tc.Community() }
func (c *conn) host() string                     { return c.tc.Host() }
func (c *conn) channelReader() *channel.Reader   { return c.reader }
func (c *conn) disconnect(code int, text string) { c.beginClose(code, text) }

// sessionsOf returns the sessions of this process bound to community c:
// its connections, then the open streams.
func (r *Relay) sessionsOf(c tenant.CommunityID) []session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []session
	for cn := range r.conns {
		if cn.tc.Community() == c {
			out = append(out, cn)
		}
	}
	for s := range r.streams {
		if s.tc.Community() == c {
			out = append(out, s)
		}
	}
	return out
}

// streamsOf returns the open streams of this process bound to community c.
func (r *Relay) streamsOf(c tenant.CommunityID) []*Stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Stream
	for s := range r.streams {
		if s.tc.Community() == c {
			out = append(out, s)
		}
	}
	return out
}
