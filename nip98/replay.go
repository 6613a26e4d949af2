package nip98

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// OperatorScopeName is the replay namespace of the operator API, shared by
// every host the API answers on.
const OperatorScopeName = "operator-management"

// ReplayScope is the namespace in which an event id may be used once: one
// per community, plus the operator API's. The same event presented to two
// communities is two different uses. The zero value is no scope, and every
// guard refuses it.
type ReplayScope struct {
	community tenant.CommunityID
	operator  bool
}

// CommunityScope returns the replay scope of community c — the community
// the request's host is bound to, never one named by the client.
func CommunityScope(c tenant.CommunityID) ReplayScope { return ReplayScope{community: c} }

// OperatorScope returns the replay scope of the operator API.
func OperatorScope() ReplayScope { return ReplayScope{operator: true} }

// IsZero reports whether s is no scope.
func (s ReplayScope) IsZero() bool { return !s.operator && s.community.IsZero() }

// String returns the scope's key component: the community's UUID text, or
// OperatorScopeName ("" for the zero scope).
func (s ReplayScope) String() string {
	switch {
	case s.operator:
		return OperatorScopeName
	case s.community.IsZero():
		return ""
	default:
		return s.community.String()
	}
}

// ReplayGuard remembers which event ids were used in which scope.
//
// Mark records eventID (64 lowercase hex) as used in scope for about ttl
// (implementations clamp it to [MinReplayTTL, MaxReplayTTL]). It returns nil
// the first time, an error wrapping ErrReplayed when the id is already
// recorded in that scope, and any other error when it cannot decide — which
// the caller must treat as a refusal (fail closed). It must be safe for
// concurrent use, and two concurrent Marks of the same id and scope must not
// both succeed.
type ReplayGuard interface {
	Mark(ctx context.Context, scope ReplayScope, eventID string, ttl time.Duration) error
}

// Bounds of the time an event id is remembered. The floor is twice the
// default ±60 s window, which covers any event still inside it; the ceiling
// keeps a buggy caller from pinning entries for an implausible time.
const (
	MinReplayTTL = 120 * time.Second
	MaxReplayTTL = 3600 * time.Second
)

// ClampReplayTTL returns ttl within [MinReplayTTL, MaxReplayTTL]: how long a
// ReplayGuard remembers an event id it was asked to keep for ttl.
func ClampReplayTTL(ttl time.Duration) time.Duration {
	return min(max(ttl, MinReplayTTL), MaxReplayTTL)
}

var (
	errNoScope   = errors.New("nip98: no replay scope")
	errBadMarkID = errors.New("nip98: event id must be 64 lowercase hex characters")
	errGuardFull = errors.New("nip98: replay guard is full")
)

// ValidateMark returns the error a ReplayGuard's Mark returns, before
// recording anything, for a zero scope or an event id that is not 64
// lowercase hex characters; nil when both are valid.
func ValidateMark(scope ReplayScope, eventID string) error {
	if scope.IsZero() {
		return errNoScope
	}
	if !nostr.IsLowerHex(eventID, 64) {
		return errBadMarkID
	}
	return nil
}

// DefaultMemoryCapacity is the capacity of the in-process guard a Verifier
// uses when given none.
const DefaultMemoryCapacity = 100_000

// MemoryGuard is an in-process ReplayGuard holding at most a fixed number of
// live ids. It is correct for a single process only: with several replicas,
// a replay succeeds once per replica — use redisreplay.Guard (package
// nip98/redisreplay) there.
//
// When it is full it first reclaims expired ids; if every entry is still
// live it FAILS CLOSED, returning ErrReplayUnavailable, rather than evicting
// an id whose event could still be replayed. Capacity therefore bounds the
// sustained rate of accepted requests to about capacity / TTL (100 000 ids
// over 120 s ≈ 830 requests per second per scope set).
type MemoryGuard struct {
	capacity int
	now      func() time.Time

	mu      sync.Mutex
	entries map[memKey]time.Time // live ids and their expiry
	expiry  expiryHeap           // the same ids ordered by expiry (may hold stale duplicates)
}

type memKey struct {
	scope ReplayScope
	id    string
}

// MemoryOption configures a MemoryGuard.
type MemoryOption func(*MemoryGuard) error

// WithMemoryClock sets the clock used for expiry (default time.Now).
func WithMemoryClock(now func() time.Time) MemoryOption {
	return func(g *MemoryGuard) error {
		if now == nil {
			return errors.New("nip98: nil clock")
		}
		g.now = now
		return nil
	}
}

// NewMemoryGuard returns an in-process guard holding at most capacity live
// ids (at least 1).
func NewMemoryGuard(capacity int, opts ...MemoryOption) (*MemoryGuard, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("nip98: memory guard capacity must be at least 1, got %d", capacity)
	}
	g := &MemoryGuard{capacity: capacity, now: time.Now, entries: make(map[memKey]time.Time)}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("nip98: nil option")
		}
		if err := o(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Mark implements ReplayGuard. When full of live ids it returns an error
// wrapping ErrReplayUnavailable.
func (g *MemoryGuard) Mark(_ context.Context, scope ReplayScope, eventID string, ttl time.Duration) error {
	if err := ValidateMark(scope, eventID); err != nil {
		return err
	}
	now := g.now()
	k := memKey{scope: scope, id: eventID}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reclaim(now)
	if exp, ok := g.entries[k]; ok && exp.After(now) {
		return ErrReplayed
	}
	if len(g.entries) >= g.capacity {
		return fmt.Errorf("%w: %w", ErrReplayUnavailable, errGuardFull)
	}
	exp := now.Add(ClampReplayTTL(ttl))
	g.entries[k] = exp
	heap.Push(&g.expiry, expiryItem{key: k, exp: exp})
	return nil
}

// Len returns the number of ids held, expired ones not yet reclaimed
// included.
func (g *MemoryGuard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.entries)
}

// reclaim drops every entry whose expiry is not after now.
func (g *MemoryGuard) reclaim(now time.Time) {
	for len(g.expiry) > 0 && !g.expiry[0].exp.After(now) {
		it := heap.Pop(&g.expiry).(expiryItem)
		if exp, ok := g.entries[it.key]; ok && exp.Equal(it.exp) {
			delete(g.entries, it.key)
		}
	}
}

type expiryItem struct {
	key memKey
	exp time.Time
}

type expiryHeap []expiryItem

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].exp.Before(h[j].exp) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryItem)) }
func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = expiryItem{}
	*h = old[:len(old)-1]
	return it
}
