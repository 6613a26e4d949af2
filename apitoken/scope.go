// Package apitoken is buzz's API tokens: an owner or admin of a community
// mints a token that acts as one pubkey with a fixed set of scopes (Buzz's
// scope names, Scope) until it expires or is revoked. The token is shown
// once; the store keeps its SHA-256 (store.TokenStore), looked up within
// the community of the request's host only.
//
// A token is presented over HTTP as "Authorization: Bearer buzz_…" and
// over WebSocket in a NIP-42 AUTH event signed by the pubkey it acts as,
// in an "auth_token" tag — as Buzz does. The relay (buzz.WithAPITokens)
// then lets the request or connection do exactly what its scopes allow.
// Revocation is published on the control bus (control.TokenRevoked) so
// that every process closes the connections that authenticated with it;
// HTTP requests look the token up in the shared store each time, so a
// revoked token is refused by every process at once.
//
// Minting, the use of a revoked or expired token and scope refusals are
// recorded in the community's audit chain (store.AuditTokenMinted,
// store.AuditTokenRevoked, store.AuditTokenRefused).
//
// apitoken must not import the relay (package buzz), a backend or a
// database driver.
package apitoken

import (
	"fmt"
	"slices"
	"strings"
)

// Scope is one permission a token grants, named as Buzz names it
// ("messages:read").
type Scope string

// Buzz's scopes.
const (
	MessagesRead       Scope = "messages:read"       // read events (REQ, COUNT, POST /query, /count)
	MessagesWrite      Scope = "messages:write"      // publish messages, reactions, deletions, …
	ChannelsRead       Scope = "channels:read"       // join and leave channels
	ChannelsWrite      Scope = "channels:write"      // create channels, edit their metadata, invite
	AdminChannels      Scope = "admin:channels"      // add and remove members, delete channels, archive
	UsersRead          Scope = "users:read"          // read profiles
	UsersWrite         Scope = "users:write"         // publish one's profile and contact list, NIP-05 names
	AdminUsers         Scope = "admin:users"         // moderation and audit reads
	JobsRead           Scope = "jobs:read"           // read workflow runs
	JobsWrite          Scope = "jobs:write"          // define and trigger workflows
	SubscriptionsRead  Scope = "subscriptions:read"  // reserved (Buzz's plan information)
	SubscriptionsWrite Scope = "subscriptions:write" // reserved
	FilesRead          Scope = "files:read"          // reserved (media)
	FilesWrite         Scope = "files:write"         // reserved
	ReposRead          Scope = "repos:read"          // reserved (git)
	ReposWrite         Scope = "repos:write"         // publish repository announcements (30617, 30618)
)

// All returns every scope, in Buzz's order.
func All() []Scope {
	return []Scope{MessagesRead, MessagesWrite, ChannelsRead, ChannelsWrite, AdminChannels,
		UsersRead, UsersWrite, AdminUsers, JobsRead, JobsWrite, SubscriptionsRead, SubscriptionsWrite,
		FilesRead, FilesWrite, ReposRead, ReposWrite}
}

// Valid reports whether s is one of Buzz's scopes.
func (s Scope) Valid() bool { return slices.Contains(All(), s) }

// MaxScopes bounds the scopes of one token (every scope, once).
const MaxScopes = 16

// ParseScopes parses scope names, given as separate values or
// comma-separated, into a sorted set without repeats. An unknown or empty
// name, or none at all, is an error whose message is NIP-01 prefixed
// ("invalid: …").
func ParseScopes(names ...string) ([]Scope, error) {
	var out []Scope
	for _, n := range names {
		for _, part := range strings.Split(n, ",") {
			s := Scope(strings.TrimSpace(part))
			if !s.Valid() {
				return nil, fmt.Errorf("invalid: unknown scope %q", clipName(string(s)))
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("invalid: a token needs at least one scope")
	}
	slices.Sort(out)
	return out, nil
}

// Strings returns the names of ss.
func Strings(ss []Scope) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// InsufficientScope is the refusal of a request its token's scopes do not
// allow, Buzz's text: "restricted: insufficient scope (need messages:write)".
func InsufficientScope(need Scope) string {
	return "restricted: insufficient scope (need " + string(need) + ")"
}

func clipName(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}
