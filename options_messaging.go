package buzz

import (
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/store"
)

// WithKindAllowList restricts the kinds clients may publish: an event of
// a kind k does not allow is refused with "restricted: unknown event kind"
// (Buzz's answer), before rate limiting and storage. The default allows
// every kind, as a general-purpose relay does; messaging.BuzzKinds() is
// the list of a Buzz-compatible relay, and messaging.ParseKinds reads the
// setting's text form ("buzz,30023,5000-5999"). It is the relay's list: a
// community with a setting of its own (store.CommunityKindsStore, set
// through the operator or owner API) uses that instead.
func WithKindAllowList(k messaging.Kinds) Option {
	return func(c *config) error {
		c.kinds = k
		return nil
	}
}

// reactionStore is the store's reaction slots (store.ReactionStore), or
// nil when it keeps none: then identical reactions are all stored.
func reactionStore(s store.EventStore) store.ReactionStore {
	rs, _ := s.(store.ReactionStore)
	return rs
}

// projectStore is the store's project state (NIP-PC project changes), if
// it keeps one.
func projectStore(s store.EventStore) store.ProjectStore {
	ps, _ := s.(store.ProjectStore)
	return ps
}

// repoNameStore is the store's repository name reservations (kind 30617),
// if it keeps them.
func repoNameStore(s store.EventStore) store.RepoNameStore {
	rs, _ := s.(store.RepoNameStore)
	return rs
}

// threadStore is the store's ThreadStore, nil when it keeps no threads.
func threadStore(s store.EventStore) store.ThreadStore {
	ts, _ := s.(store.ThreadStore)
	return ts
}

// communityKindsStore is the store's per-community kind allow-list
// settings (store.CommunityKindsStore), or nil: then every community uses
// the relay's list.
func communityKindsStore(s store.EventStore) store.CommunityKindsStore {
	ks, _ := s.(store.CommunityKindsStore)
	return ks
}

// agentOwnerStore is the store's agent owners (store.AgentOwnerStore), or
// nil: then no owner is recorded and only a message's author edits it.
func agentOwnerStore(s store.EventStore) store.AgentOwnerStore {
	as, _ := s.(store.AgentOwnerStore)
	return as
}
