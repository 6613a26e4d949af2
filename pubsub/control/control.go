package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/buzzrelay/buzz/tenant"
)

// Message is one control message. It is implemented only by the types of
// this package.
type Message interface {
	// Type is the message's wire discriminator.
	Type() string
	isMessage()
}

// MembershipChanged says PubKey's membership of Channel changed: caches of
// accessible channels must be dropped and subscriptions the pubkey may no
// longer read closed. An empty Channel means community-wide access changed
// (PubKey was removed from the community's members). An empty PubKey with a
// Channel means the channel's members, roles or metadata changed without
// anyone losing access: only cached access is dropped.
type MembershipChanged struct {
	Channel string `json:"channel,omitempty"`
	PubKey  string `json:"pubkey,omitempty"`
}

// VisibilityChanged says Channel's visibility changed (for example open →
// private): subscriptions of non-members must be re-checked.
type VisibilityChanged struct {
	Channel string `json:"channel"`
}

// DisconnectPubkey asks every process to close all connections of PubKey in
// the community (ban, identity archived). Reason is shown to the client.
type DisconnectPubkey struct {
	PubKey string `json:"pubkey"`
	Reason string `json:"reason,omitempty"`
}

// DisconnectCommunity asks every process to close all connections of the
// community (archived). Reason is shown to the client.
type DisconnectCommunity struct {
	Reason string `json:"reason,omitempty"`
}

// HostsChanged says the mapping of the community's Hosts changed in the
// store (provisioned, archived, unarchived, an alias added or removed):
// every process must forget what its host cache holds about them, so the
// change takes effect at once everywhere. Archived reports the community's
// state after the change — unless AliasOnly: only host aliases were added
// or removed, the community's archived state did not change and Archived
// says nothing about it (an ArchiveFence keeps what it has).
//
// It is deployment-wide (see DeploymentWide): a Bus delivers it to every
// process, including those with no interest in the community — after an
// archive no process has any, yet each may still cache the host.
type HostsChanged struct {
	Hosts     []string `json:"hosts"`
	Archived  bool     `json:"archived,omitempty"`
	AliasOnly bool     `json:"alias_only,omitempty"`
}

// DeploymentWide reports whether m must reach every process of the
// deployment rather than only those with interest in its community.
func DeploymentWide(m Message) bool {
	switch m.(type) {
	case HostsChanged, PodJoined, PodLeft:
		return true
	}
	return false
}

// PodJoined says a relay process ("pod") named Pod, running Version,
// started. It concerns no community: it is published for Deployment() and
// is deployment-wide.
type PodJoined struct {
	Pod     string `json:"pod"`
	Version string `json:"version,omitempty"`
}

// PodLeft says the pod named Pod, running Version, is shutting down
// gracefully. Published for Deployment(); deployment-wide.
type PodLeft struct {
	Pod     string `json:"pod"`
	Version string `json:"version,omitempty"`
}

// Deployment is the community identifier that messages about the
// deployment itself (PodJoined, PodLeft) are published for: the max UUID,
// which no community id (a random or time-ordered UUID) ever is.
func Deployment() tenant.CommunityID {
	return tenant.FromUUID([16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
}

// RestrictionChanged says a moderation action changed PubKey's bans or
// timeouts in the community: cached restrictions must be dropped, and when
// Banned, the pubkey's live subscriptions closed (CLOSED "blocked: …").
type RestrictionChanged struct {
	PubKey string `json:"pubkey"`
	Banned bool   `json:"banned,omitempty"`
}

// PolicyChanged says the community's access policy changed to Access
// ("open" or "members"): cached policies must be dropped, and when it is
// "members", live subscriptions of connections without a member among
// their authenticated pubkeys closed.
type PolicyChanged struct {
	Access string `json:"access"`
}

// TokenRevoked says the community's API token Token (its id, never the
// token) was revoked: every process closes the connections that
// authenticated with it (package apitoken).
type TokenRevoked struct {
	Token string `json:"token"`
}

// Wire discriminators.
const (
	TypeMembershipChanged   = "membership_changed"
	TypeVisibilityChanged   = "visibility_changed"
	TypeDisconnectPubkey    = "disconnect_pubkey"
	TypeDisconnectCommunity = "disconnect_community"
	TypeHostsChanged        = "hosts_changed"
	TypeRestrictionChanged  = "restriction_changed"
	TypePolicyChanged       = "policy_changed"
	TypePodJoined           = "pod_joined"
	TypePodLeft             = "pod_left"
	TypeTokenRevoked        = "token_revoked"
)

func (MembershipChanged) Type() string   { return TypeMembershipChanged }
func (VisibilityChanged) Type() string   { return TypeVisibilityChanged }
func (DisconnectPubkey) Type() string    { return TypeDisconnectPubkey }
func (DisconnectCommunity) Type() string { return TypeDisconnectCommunity }
func (HostsChanged) Type() string        { return TypeHostsChanged }
func (RestrictionChanged) Type() string  { return TypeRestrictionChanged }
func (PolicyChanged) Type() string       { return TypePolicyChanged }
func (PodJoined) Type() string           { return TypePodJoined }
func (PodLeft) Type() string             { return TypePodLeft }
func (TokenRevoked) Type() string        { return TypeTokenRevoked }

func (MembershipChanged) isMessage()   {}
func (VisibilityChanged) isMessage()   {}
func (DisconnectPubkey) isMessage()    {}
func (DisconnectCommunity) isMessage() {}
func (HostsChanged) isMessage()        {}
func (RestrictionChanged) isMessage()  {}
func (PolicyChanged) isMessage()       {}
func (PodJoined) isMessage()           {}
func (PodLeft) isMessage()             {}
func (TokenRevoked) isMessage()        {}

// Handler receives control messages. It must not block: it runs on the
// delivering goroutine.
type Handler func(community tenant.CommunityID, m Message)

// Bus delivers control messages to every process serving the community,
// including the sending one. A process receives a community's control
// messages while it has any local interest in that community, and
// deployment-wide messages (DeploymentWide) always.
type Bus interface {
	// PublishControl delivers m to local handlers at once and to the other
	// processes.
	PublishControl(ctx context.Context, community tenant.CommunityID, m Message) error
	// ListenControl registers h; the returned func unregisters it.
	ListenControl(h Handler) (stop func())
}

// ErrUnknownType is returned by Decode for a well-formed envelope whose type
// this version does not know.
var ErrUnknownType = errors.New("control: unknown message type")

// Envelope is the wire form of a control message.
type envelope struct {
	V         int             `json:"v"`
	Community string          `json:"c"`
	Origin    string          `json:"o"`
	Type      string          `json:"t"`
	Body      json.RawMessage `json:"m"`
}

// Encode returns the wire form of m for community, tagged with origin (an
// opaque identifier of the sending process, used to drop its own echo).
func Encode(community tenant.CommunityID, origin string, m Message) ([]byte, error) {
	if m == nil {
		return nil, errors.New("control: nil message")
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("control: encode %s: %w", m.Type(), err)
	}
	return json.Marshal(envelope{V: 1, Community: community.String(), Origin: origin, Type: m.Type(), Body: body})
}

// Decoded is a decoded envelope. Community is the text form from the wire:
// the receiver must compare it with the community of the topic the message
// arrived on and never mint a CommunityID from it.
type Decoded struct {
	Community string
	Origin    string
	Type      string
	Message   Message // nil when Decode returns ErrUnknownType
}

// Decode parses a wire envelope. An envelope with an unknown type returns the
// Decoded header and an error wrapping ErrUnknownType.
func Decode(data []byte) (Decoded, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return Decoded{}, fmt.Errorf("control: decode envelope: %w", err)
	}
	if env.V != 1 {
		return Decoded{}, fmt.Errorf("control: unsupported envelope version %d", env.V)
	}
	d := Decoded{Community: env.Community, Origin: env.Origin, Type: env.Type}
	var err error
	switch env.Type {
	case TypeMembershipChanged:
		d.Message, err = decodeBody[MembershipChanged](env.Body)
	case TypeVisibilityChanged:
		d.Message, err = decodeBody[VisibilityChanged](env.Body)
	case TypeDisconnectPubkey:
		d.Message, err = decodeBody[DisconnectPubkey](env.Body)
	case TypeDisconnectCommunity:
		d.Message, err = decodeBody[DisconnectCommunity](env.Body)
	case TypeHostsChanged:
		d.Message, err = decodeBody[HostsChanged](env.Body)
	case TypeRestrictionChanged:
		d.Message, err = decodeBody[RestrictionChanged](env.Body)
	case TypePolicyChanged:
		d.Message, err = decodeBody[PolicyChanged](env.Body)
	case TypePodJoined:
		d.Message, err = decodeBody[PodJoined](env.Body)
	case TypePodLeft:
		d.Message, err = decodeBody[PodLeft](env.Body)
	case TypeTokenRevoked:
		d.Message, err = decodeBody[TokenRevoked](env.Body)
	default:
		return d, fmt.Errorf("%w %q", ErrUnknownType, env.Type)
	}
	if err != nil {
		return Decoded{}, fmt.Errorf("control: decode %s: %w", env.Type, err)
	}
	return d, nil
}

func decodeBody[T Message](body json.RawMessage) (Message, error) {
	var v T
	if len(body) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// Handlers is a set of registered Handlers, safe for concurrent use. It is
// the building block of Bus implementations.
type Handlers struct {
	mu   sync.RWMutex
	next uint64
	hs   map[uint64]Handler
}

// Add registers h and returns its remover.
func (s *Handlers) Add(h Handler) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hs == nil {
		s.hs = make(map[uint64]Handler)
	}
	id := s.next
	s.next++
	s.hs[id] = h
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.hs, id)
			s.mu.Unlock()
		})
	}
}

// Deliver calls every registered handler.
func (s *Handlers) Deliver(community tenant.CommunityID, m Message) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, h := range s.hs {
		h(community, m)
	}
}

// Local is the in-process Bus for a single relay process. The zero value is
// ready to use.
type Local struct {
	hs Handlers
}

// PublishControl delivers m to every local handler.
func (l *Local) PublishControl(_ context.Context, community tenant.CommunityID, m Message) error {
	if community.IsZero() {
		return errors.New("control: zero community")
	}
	if m == nil {
		return errors.New("control: nil message")
	}
	l.hs.Deliver(community, m)
	return nil
}

// ListenControl registers h.
func (l *Local) ListenControl(h Handler) (stop func()) { return l.hs.Add(h) }
