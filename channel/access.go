package channel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/internal/ttlcache"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Store is what the channel domain reads from a storage backend. Every
// call is scoped by community: a channel id is only ever looked up in c.
// store.ChannelStore includes it; both backends implement it.
type Store interface {
	// Channel returns channel id of community c; ErrNoChannel when c holds
	// no such channel or it was deleted.
	Channel(ctx context.Context, c tenant.CommunityID, id ID) (Channel, error)
	// ChannelRole returns pubkey's role in the channel, ok false when it is
	// not an active member.
	ChannelRole(ctx context.Context, c tenant.CommunityID, id ID, pubkey string) (role Role, ok bool, err error)
	// ReadableChannels returns the channels of c any of pubkeys may read
	// (MayRead): every open channel, and the private ones where one of
	// pubkeys is an active member. Deleted channels are never included.
	ReadableChannels(ctx context.Context, c tenant.CommunityID, pubkeys []string) ([]ID, error)
	// CommunityAccess returns c's access policy (AccessOpen unless set).
	CommunityAccess(ctx context.Context, c tenant.CommunityID) (AccessPolicy, error)
	// CommunityRole returns pubkey's role in the community (RoleOwner for
	// its owner); ok false for a non-member.
	CommunityRole(ctx context.Context, c tenant.CommunityID, pubkey string) (role Role, ok bool, err error)
}

// Defaults of NewAccess.
const (
	// DefaultCacheTTL bounds how long a channel, role, community policy or
	// membership looked up by Access is reused.
	DefaultCacheTTL = 2 * time.Second
	// DefaultScopeTTL bounds how long a Reader reuses its readable set.
	DefaultScopeTTL = 10 * time.Second
)

// cacheEntries bounds the lookups Access keeps at once (channels, roles,
// policies, memberships). At DefaultCacheTTL that is 16,000 distinct
// lookups a second; past it the least used are evicted and looked up
// again. (What an entry costs unused: ttlcache.Config.MaxEntries.)
const cacheEntries = 32_768

// An Option configures NewAccess.
type Option func(*Access) error

// WithCacheTTL sets how long lookups are reused (default
// DefaultCacheTTL). Changes made through this Access (ChannelChanged,
// PolicyChanged, MemberChanged) take effect at once; a change made by
// another process is seen after at most d.
func WithCacheTTL(d time.Duration) Option {
	return func(a *Access) error {
		if d <= 0 {
			return fmt.Errorf("channel: WithCacheTTL(%v): must be positive", d)
		}
		a.cacheTTL = d
		return nil
	}
}

// WithScopeTTL sets how long a Reader reuses its readable set (default
// DefaultScopeTTL). ChannelChanged marks every Reader of the community
// stale at once; a change another process made and announced nowhere is
// seen after at most d.
func WithScopeTTL(d time.Duration) Option {
	return func(a *Access) error {
		if d <= 0 {
			return fmt.Errorf("channel: WithScopeTTL(%v): must be positive", d)
		}
		a.scopeTTL = d
		return nil
	}
}

// WithClock sets the clock entries expire by (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(a *Access) error {
		if now == nil {
			return errors.New("channel: WithClock(nil)")
		}
		a.now = now
		return nil
	}
}

// WithMembershipRequired makes every community members-only, whatever
// its own policy (NIP-43 relay membership required, Buzz's
// BUZZ_REQUIRE_RELAY_MEMBERSHIP): Policy answers AccessMembers for all.
func WithMembershipRequired() Option {
	return func(a *Access) error {
		a.membersOnly = true
		return nil
	}
}

// WithLogger sets where background failures are logged (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(a *Access) error {
		if l == nil {
			return errors.New("channel: WithLogger(nil)")
		}
		a.log = l
		return nil
	}
}

// Access decides who may read and write the channels of a store's
// communities, with one cache for both sides: channels, roles, community
// policies and memberships are looked up once per cache TTL whether a
// write's admission or a read asked. The relay's WebSocket handler and any
// other frontend use it the same way: Admit and CommunityWrite for writes,
// a Reader per connection for reads, and ChannelChanged, PolicyChanged and
// MemberChanged when the state changes (here or, announced, elsewhere).
// It is safe for concurrent use; Close releases its cache.
type Access struct {
	store    Store
	cacheTTL time.Duration
	scopeTTL time.Duration
	now      func() time.Time
	log      *slog.Logger
	cache    *ttlcache.Cache[string, any]
	// membersOnly: WithMembershipRequired.
	membersOnly bool

	mu   sync.Mutex
	gens map[tenant.CommunityID]*atomic.Uint64 // bumped on every channel change
}

// NewAccess returns the access rules over s.
func NewAccess(s Store, opts ...Option) (*Access, error) {
	if s == nil {
		return nil, errors.New("channel: NewAccess: nil store")
	}
	a := &Access{store: s, cacheTTL: DefaultCacheTTL, scopeTTL: DefaultScopeTTL, now: time.Now,
		log: slog.Default(), gens: make(map[tenant.CommunityID]*atomic.Uint64)}
	for _, o := range opts {
		if err := o(a); err != nil {
			return nil, err
		}
	}
	c, err := ttlcache.New[string, any](ttlcache.Config{MaxEntries: cacheEntries, TTL: a.cacheTTL, Now: a.now})
	if err != nil {
		return nil, fmt.Errorf("channel: NewAccess: %w", err)
	}
	a.cache = c
	return a, nil
}

// Close releases the cache. The Access must not be used after.
func (a *Access) Close() { a.cache.Close() }

// Cache keys: a tag byte, the community, then what the entry is about.
const (
	keyPolicy  = 'p'
	keyMember  = 'm'
	keyChannel = 'c'
	keyRole    = 'r'
)

func cacheKey(tag byte, c tenant.CommunityID, id *ID, pubkey string) string {
	u := c.UUID()
	b := make([]byte, 0, 1+16+16+len(pubkey))
	b = append(b, tag)
	b = append(b, u[:]...)
	if id != nil {
		b = append(b, id[:]...)
	}
	return string(append(b, pubkey...))
}

type (
	noChannel struct{}
	roleEntry struct {
		role Role
		ok   bool
	}
)

// Policy returns c's access policy (cached): AccessMembers for every
// community under WithMembershipRequired.
func (a *Access) Policy(ctx context.Context, c tenant.CommunityID) (AccessPolicy, error) {
	if a.membersOnly {
		return AccessMembers, nil
	}
	v, err := a.cache.Load(cacheKey(keyPolicy, c, nil, ""), func() (any, error) {
		return a.store.CommunityAccess(ctx, c)
	})
	if err != nil {
		return "", err
	}
	return v.(AccessPolicy), nil
}

// IsCommunityMember reports whether pubkey is a member of community c
// (cached).
func (a *Access) IsCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string) (bool, error) {
	v, err := a.cache.Load(cacheKey(keyMember, c, nil, pubkey), func() (any, error) {
		_, ok, err := a.store.CommunityRole(ctx, c, pubkey)
		return ok, err
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// Channel returns channel id of community c (cached, unknown channels
// too); ErrNoChannel when c holds no such channel or it was deleted.
func (a *Access) Channel(ctx context.Context, c tenant.CommunityID, id ID) (Channel, error) {
	v, err := a.cache.Load(cacheKey(keyChannel, c, &id, ""), func() (any, error) {
		ch, err := a.store.Channel(ctx, c, id)
		if errors.Is(err, ErrNoChannel) {
			return noChannel{}, nil
		}
		return ch, err
	})
	if err != nil {
		return Channel{}, err
	}
	if ch, ok := v.(Channel); ok {
		return ch, nil
	}
	return Channel{}, ErrNoChannel
}

// Role returns pubkey's role in channel id of community c (cached), ok
// false when it is not an active member.
func (a *Access) Role(ctx context.Context, c tenant.CommunityID, id ID, pubkey string) (Role, bool, error) {
	v, err := a.cache.Load(cacheKey(keyRole, c, &id, pubkey), func() (any, error) {
		role, ok, err := a.store.ChannelRole(ctx, c, id, pubkey)
		return roleEntry{role, ok}, err
	})
	if err != nil {
		return "", false, err
	}
	r := v.(roleEntry)
	return r.role, r.ok, nil
}

// ChannelChanged applies a committed channel change to the cache and the
// Readers of community c: the channel's entry, and the roles of cmd's
// actor and target (cmd may be nil) are dropped at once, and every Reader
// of c recomputes its readable set on its next use. A frontend calls it
// for every change, made here or announced by another process.
func (a *Access) ChannelChanged(c tenant.CommunityID, id ID, cmd *Command) {
	a.cache.Del(cacheKey(keyChannel, c, &id, ""))
	if cmd != nil {
		a.cache.Del(cacheKey(keyRole, c, &id, cmd.Actor))
		if cmd.Target != "" {
			a.cache.Del(cacheKey(keyRole, c, &id, cmd.Target))
		}
	}
	a.gen(c).Add(1)
}

// MembersChanged is ChannelChanged for a change of channel id that the
// relay made itself (a DM conversation opened or a participant's state):
// the channel's entry and the roles of pubkeys are dropped, and every
// Reader of c recomputes its readable set on its next use.
func (a *Access) MembersChanged(c tenant.CommunityID, id ID, pubkeys []string) {
	a.cache.Del(cacheKey(keyChannel, c, &id, ""))
	for _, pk := range pubkeys {
		a.cache.Del(cacheKey(keyRole, c, &id, pk))
	}
	a.gen(c).Add(1)
}

// PolicyChanged drops c's cached access policy (it was changed, here or by
// another process).
func (a *Access) PolicyChanged(c tenant.CommunityID) {
	a.cache.Del(cacheKey(keyPolicy, c, nil, ""))
}

// MemberChanged drops the cached community membership of pubkey in c.
func (a *Access) MemberChanged(c tenant.CommunityID, pubkey string) {
	a.cache.Del(cacheKey(keyMember, c, nil, pubkey))
}

func (a *Access) gen(c tenant.CommunityID) *atomic.Uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.gens[c]
	if g == nil {
		g = new(atomic.Uint64)
		a.gens[c] = g
	}
	return g
}

// Writes.

// CommunityWrite applies community c's access policy to a write by
// author: "" when it may write, else the refusal (requestAuth when the
// client should authenticate first). authed is nil on a connection that
// did not authenticate, else reports whether it authenticated as a key.
func (a *Access) CommunityWrite(ctx context.Context, c tenant.CommunityID, author string, authed func(pubkey string) bool) (refusal string, requestAuth bool, err error) {
	pol, err := a.Policy(ctx, c)
	if err != nil || pol != AccessMembers {
		return "", false, err
	}
	if authed == nil {
		return MsgMembersOnlyAuth, true, nil
	}
	if !authed(author) {
		return MsgNotAuthor, false, nil
	}
	ok, err := a.IsCommunityMember(ctx, c, author)
	if err != nil {
		return "", false, err
	}
	if !ok {
		return MsgMembersOnly, false, nil
	}
	return "", false, nil
}

// RequiresChannel reports whether events of kind must name a channel: chat
// messages (9), Buzz's channel message kinds (40002–40008), its forum kinds
// (45001–45003) and the channel commands.
func RequiresChannel(kind int) bool {
	return kind == nostr.KindChatMessage || isBuzzMessage(kind) || isForum(kind) || IsCommand(kind)
}

// isForum reports whether kind is one of Buzz's forum kinds, 45001–45003
// (messaging.IsForum).
func isForum(kind int) bool {
	return kind >= 45001 && kind <= 45003
}

// isBuzzMessage reports whether kind is one of Buzz's channel message
// kinds, 40002–40008 (messaging.IsChannelMessage; this package imports
// none of the feature packages).
func isBuzzMessage(kind int) bool {
	return kind >= 40002 && kind <= 40008
}

// Admission is what Admit decided for one event.
type Admission struct {
	// InChannel: the event names a channel (its h tag), Channel.
	InChannel bool
	Channel   ID
	// Command is the parsed command of a command event (kinds 9000–9022),
	// which the store authorizes (Authorize) atomically with its effect.
	// For a join (9021) offering a code, the caller sets Invited once it
	// has checked the code against the channel's stored invites.
	Command *Command
}

// Admit resolves the event's h tag inside community c and decides whether
// its author may post there (MayPost; a command's roles are judged by the
// store). It returns the decision, or a refusal (MsgChannelDenied for an
// unknown channel, another community's, a channel the author may not
// post in — alike), or a lookup error. An event without h is
// community-wide: admitted, unless its kind requires a channel.
func (a *Access) Admit(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) (Admission, string, error) {
	id, has, err := OfEvent(ev)
	if err != nil {
		return Admission{}, MsgBadChannelTag, nil
	}
	if !has {
		if RequiresChannel(ev.Kind) {
			return Admission{}, fmt.Sprintf(msgMissingChannel, ev.Kind), nil
		}
		return Admission{}, "", nil
	}
	d := Admission{InChannel: true, Channel: id}
	if IsCommand(ev.Kind) {
		cmd, err := ParseCommand(ev, id)
		if err != nil {
			return Admission{}, MsgBadCommand, nil
		}
		if ev.Kind != nostr.KindCreateChannel {
			ch, err := a.Channel(ctx, c, id)
			if errors.Is(err, ErrNoChannel) || err == nil && ch.GroupID() != cmd.GroupID {
				return Admission{}, MsgChannelDenied, nil
			} else if err != nil {
				return Admission{}, "", err
			}
		}
		d.Command = &cmd
		return d, "", nil
	}
	ch, err := a.Channel(ctx, c, id)
	if errors.Is(err, ErrNoChannel) || err == nil && ch.GroupID() != GroupIDOf(ev) {
		return Admission{}, MsgChannelDenied, nil
	}
	if err != nil {
		return Admission{}, "", err
	}
	role, member, err := a.Role(ctx, c, id, ev.PubKey)
	if err != nil {
		return Admission{}, "", err
	}
	if !MayPost(ch, role, member) {
		return Admission{}, MsgChannelDenied, nil
	}
	return d, "", nil
}

// LateMessage is the refusal of a group event older than maxAge (NIP-29
// late publication).
func LateMessage(maxAge time.Duration) string { return fmt.Sprintf(msgLateGroupEvent, maxAge) }
