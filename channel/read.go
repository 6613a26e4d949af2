package channel

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Reads.
//
// A connection reads the community-wide events of its community plus the
// channels its readers may read (MayRead: open channels for anyone the
// community admits, private ones for their members). Its readers are the
// pubkeys it authenticated as (NIP-42, NIP-98); before it authenticates
// it reads open channels only, so reading a private channel requires
// authentication.
//
//   - A REQ or COUNT is decided by Reader.Check, which returns the Scope
//     to push into the store query (store.ChannelStore.QueryScoped), so
//     limits count only readable events. A filter whose "#h" names no
//     readable channel — unknown, another community's, or private without
//     membership, all alike — is refused with MsgChannelDenied
//     (MsgChannelAuth before authentication).
//   - Live fan-out asks Reader.Deliverable for each event: an event of a
//     channel is delivered only to readers whose readable set holds it,
//     and a gift wrap only to its recipient (see giftwrap.go).
//   - A channel change that revokes access (remove, leave, open→private,
//     delete) is applied with Access.ChannelChanged, then Reader.Revoked
//     tells each connection whether it lost the channel: the frontend
//     closes its subscriptions naming the channel with MsgChannelRevoked.
//   - In a members-only community (AccessMembers) only its members, once
//     authenticated, read at all (MembersOnlyRefusal); a member's removal
//     or a policy change is applied with Reader.LostCommunity
//     (MsgCommunityRevoked).

// MembersOnlyRefusal is community c's access policy applied to a read by
// readers (the pubkeys the client authenticated as): in a members-only
// community, the refusal when none of them is a member (needAuth when
// there are none); "" otherwise.
func (a *Access) MembersOnlyRefusal(ctx context.Context, c tenant.CommunityID, readers []string) (refusal string, needAuth bool, err error) {
	pol, err := a.Policy(ctx, c)
	if err != nil || pol != AccessMembers {
		return "", false, err
	}
	if len(readers) == 0 {
		return MsgMembersOnlyAuth, true, nil
	}
	for _, pk := range readers {
		// Uncached: a removed member's new reads are refused at once.
		_, ok, err := a.store.CommunityRole(ctx, c, pk)
		if err != nil {
			return "", false, err
		}
		if ok {
			return "", false, nil
		}
	}
	return MsgMembersOnly, false, nil
}

// NamedChannels returns the channels a filter's "#h" names (valid ids
// only), and whether it has an "#h" condition at all.
func NamedChannels(f *nostr.Filter) ([]ID, bool) {
	vals, has := f.Tags["h"]
	if !has || vals == nil {
		return nil, false
	}
	var out []ID
	for _, v := range vals {
		if id, ok := ParseID(v); ok {
			out = append(out, id)
		}
	}
	return out, true
}

// Names reports whether one of filters names channel id in "#h".
func Names(filters []nostr.Filter, id ID) bool {
	for i := range filters {
		named, _ := NamedChannels(&filters[i])
		if slices.Contains(named, id) {
			return true
		}
	}
	return false
}

// Readable reports whether every filter with an "#h" condition names at
// least one channel of scope (the one channel rule of every read).
// checked, when not nil, sees each named channel with its verdict, and
// nil for an "#h" that names no valid channel id.
func Readable(filters []nostr.Filter, scope Scope, checked func(id *ID, ok bool)) bool {
	for i := range filters {
		named, has := NamedChannels(&filters[i])
		if !has {
			continue
		}
		readable := false
		for _, id := range named {
			ok := scope.Contains(id)
			readable = readable || ok
			if checked != nil {
				checked(&id, ok)
			}
		}
		if !readable {
			if len(named) == 0 && checked != nil {
				checked(nil, false)
			}
			return false
		}
	}
	return true
}

// Reader is one connection's read access to one community: the pubkeys it
// authenticated as and its cached readable set. It is safe for concurrent
// use.
type Reader struct {
	a    *Access
	c    tenant.CommunityID
	ctx  context.Context // the connection's lifetime (background refreshes)
	gen0 *atomic.Uint64  // the community's change counter

	mu      sync.Mutex
	readers []string
	valid   bool // scope was computed (for some of readers)
	// stale: readers grew since scope was computed. scope still answers
	// (a new reader only ever adds channels) until it is recomputed.
	stale      bool
	scope      Scope
	gen        uint64
	at         time.Time
	refreshing bool
}

// Reader returns the read access of a connection to community c, with no
// authenticated pubkey yet. ctx bounds the connection's life: background
// refreshes of the readable set (see Deliverable) stop with it.
func (a *Access) Reader(ctx context.Context, c tenant.CommunityID) *Reader {
	return &Reader{a: a, c: c, ctx: ctx, gen0: a.gen(c)}
}

// Community returns the community r reads.
func (r *Reader) Community() tenant.CommunityID { return r.c }

// Authenticated records that the connection authenticated as pubkey. A new
// reader may read more channels: the readable set is recomputed on its next
// use (Scope, Check), or at once with Refresh. Until then the set computed
// before still answers Deliverable and Holds — it is a subset of the new one
// (adding a reader never takes a channel away), so live events of channels
// the connection could already read keep flowing while it authenticates.
func (r *Reader) Authenticated(pubkey string) {
	r.mu.Lock()
	if !slices.Contains(r.readers, pubkey) {
		r.readers = append(r.readers, pubkey)
		r.stale = true
	}
	r.mu.Unlock()
}

// Readers returns the pubkeys the connection authenticated as, in order.
func (r *Reader) Readers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.readers)
}

// Check decides a REQ or COUNT: the community's access policy, then the
// channel rule (Readable). It returns the Scope to query with, or a
// refusal (needAuth when authenticating could change the answer).
// checked, when not nil, sees each channel a filter names with its
// verdict (see Readable).
func (r *Reader) Check(ctx context.Context, filters []nostr.Filter, checked func(id *ID, ok bool)) (scope Scope, refusal string, needAuth bool, err error) {
	readers := r.Readers()
	if refusal, needAuth, err := r.a.MembersOnlyRefusal(ctx, r.c, readers); err != nil || refusal != "" {
		return Scope{}, refusal, needAuth, err
	}
	scope, err = r.Scope(ctx)
	if err != nil {
		return Scope{}, "", false, err
	}
	if !Readable(filters, scope, checked) {
		if len(readers) == 0 {
			return Scope{}, MsgChannelAuth, true, nil
		}
		return Scope{}, MsgChannelDenied, false, nil
	}
	return scope, "", false, nil
}

// Scope returns the readable set, computing it when missing, stale (a
// change of the community was applied since) or older than the scope TTL.
func (r *Reader) Scope(ctx context.Context) (Scope, error) {
	r.mu.Lock()
	if r.valid && !r.stale && r.gen == r.gen0.Load() && r.a.now().Sub(r.at) < r.a.scopeTTL {
		s := r.scope
		r.mu.Unlock()
		return s, nil
	}
	r.mu.Unlock()
	return r.Refresh(ctx)
}

// Refresh recomputes the readable set from the store.
func (r *Reader) Refresh(ctx context.Context) (Scope, error) {
	g := r.gen0.Load()
	readers := r.Readers()
	ids, err := r.a.store.ReadableChannels(ctx, r.c, readers)
	if err != nil {
		return Scope{}, err
	}
	s := ScopeOf(ids...)
	r.mu.Lock()
	// Never replace a set computed after a newer change with this one (a
	// slow background refresh racing a revocation).
	if !r.valid || g >= r.gen {
		r.valid, r.scope, r.gen, r.at = true, s, g, r.a.now()
		// Fresh for the readers it was computed for; a reader added
		// meanwhile keeps it stale.
		r.stale = len(r.readers) != len(readers)
	}
	r.mu.Unlock()
	return s, nil
}

// Deliverable reports whether a live event may be delivered to the
// connection — the one question live fan-out asks: a gift wrap only when
// one of its "p" tags names a reader, an author-only event only when a
// reader wrote it (GiftWrapVisible); community-wide
// events always; channel events when the channel is in the cached readable
// set. A stale set is refreshed in the background (the event is judged by
// the set as it is); before any set was computed, no channel event is
// delivered.
func (r *Reader) Deliverable(ev *nostr.Event) bool {
	if isPrivate(ev.Kind) {
		r.mu.Lock()
		visible := GiftWrapVisible(ev, r.readers)
		r.mu.Unlock()
		if !visible {
			return false
		}
	}
	id, has, err := OfEvent(ev)
	if err != nil {
		return false
	}
	if !has {
		return true
	}
	r.mu.Lock()
	ok := r.valid && r.scope.Contains(id)
	stale := !r.valid || r.stale || r.gen != r.gen0.Load() || r.a.now().Sub(r.at) >= r.a.scopeTTL
	start := stale && !r.refreshing
	if start {
		r.refreshing = true
	}
	r.mu.Unlock()
	if start {
		go func() {
			ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
			defer cancel()
			if _, err := r.Refresh(ctx); err != nil && r.ctx.Err() == nil {
				r.a.log.Error("channel: refresh read access", "community", r.c.String(), "err", err)
			}
			r.mu.Lock()
			r.refreshing = false
			r.mu.Unlock()
		}()
	}
	return ok
}

// Holds reports whether the cached readable set holds channel id.
func (r *Reader) Holds(id ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.valid && r.scope.Contains(id)
}

// Revoked applies a change that may have taken channel id away: from
// everyone (deletion, open → private) or from the revoked pubkeys. When
// the connection is affected it recomputes the readable set and reports
// whether the channel is no longer readable; the frontend then closes the
// subscriptions naming it (MsgChannelRevoked). Call Access.ChannelChanged
// first. A store failure fails closed: the connection reads no channel
// and lost is true.
func (r *Reader) Revoked(ctx context.Context, id ID, everyone bool, revoked []string) (lost bool) {
	affected := everyone
	if !affected {
		for _, pk := range r.Readers() {
			if slices.Contains(revoked, pk) {
				affected = true
				break
			}
		}
	}
	if !affected {
		return false
	}
	scope, err := r.Refresh(ctx)
	if err != nil {
		r.mu.Lock()
		r.valid, r.scope = true, Scope{}
		r.mu.Unlock()
		r.a.log.ErrorContext(ctx, "channel: recompute read access", "community", r.c.String(), "err", err)
		return true
	}
	return !scope.Contains(id)
}

// LostCommunity reports whether the connection may no longer read its
// community after a change of its membership or policy: the community is
// members-only and none of the connection's readers other than removed
// ("" for none) is a member. Lookups are uncached and fail closed: when
// the policy cannot be read it is taken for members-only (and the error
// returned with the verdict), and a membership lookup error counts as not
// a member. The frontend then closes every
// subscription of the connection (MsgCommunityRevoked).
func (r *Reader) LostCommunity(ctx context.Context, removed string) (bool, error) {
	readers := r.Readers()
	if removed != "" && !slices.Contains(readers, removed) {
		return false, nil
	}
	pol, err := r.a.store.CommunityAccess(ctx, r.c)
	if err == nil && pol != AccessMembers {
		return false, nil
	}
	return !r.a.anyMember(ctx, r.c, readers, removed), err
}

// anyMember reports whether one of pubkeys other than except is a member of
// community c (a lookup error counts as not a member).
func (a *Access) anyMember(ctx context.Context, c tenant.CommunityID, pubkeys []string, except string) bool {
	for _, pk := range pubkeys {
		if pk == except {
			continue
		}
		if _, ok, err := a.store.CommunityRole(ctx, c, pk); err == nil && ok {
			return true
		}
	}
	return false
}
