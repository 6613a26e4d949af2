package control

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// ArchiveFence is a relay's host directory in a deployment of several
// processes whose host lookups are cached per process: it resolves through
// the directory behind it, except that a community archived on any process
// is refused here (tenant.ErrUnmappedHost) for as long as that directory may
// still map its hosts.
//
// Invalidating a cache when a HostsChanged arrives is not enough on its own:
// a lookup that started before the archive committed can return its stale
// answer after the cache was invalidated and put it back. The fence closes
// that window, so no process binds a new connection to an archived
// community. A DisconnectCommunity or a HostsChanged with Archived fences
// the community; a HostsChanged without Archived (an unarchive, or a
// provision of the same community) lifts the fence at once; a HostsChanged
// with AliasOnly leaves it as it is.
//
// The fence learns of archives through OnControl, which must see every
// control message of the process's bus (buzz.WithControlHook(fence.OnControl)
// runs it before the relay invalidates its cache for the same message). It
// is safe for concurrent use; the fenced set holds only communities
// archived within the last ttl.
type ArchiveFence struct {
	next tenant.Directory
	ttl  time.Duration
	now  func() time.Time

	mu     sync.Mutex
	fenced map[tenant.CommunityID]time.Time // community → fence end
}

var _ tenant.Directory = (*ArchiveFence)(nil)

// NewArchiveFence returns a fence over next, normally the process's
// *tenant.CachingDirectory. ttl is how long an archived community stays
// fenced: at least as long as next may remember a host (the cache's TTL),
// plus a margin for a lookup in flight.
func NewArchiveFence(next tenant.Directory, ttl time.Duration) (*ArchiveFence, error) {
	if next == nil {
		return nil, errors.New("control: NewArchiveFence: nil directory")
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("control: NewArchiveFence: fence duration %v is not positive", ttl)
	}
	return &ArchiveFence{next: next, ttl: ttl, now: time.Now, fenced: make(map[tenant.CommunityID]time.Time)}, nil
}

// LookupHost resolves host through the directory behind the fence and
// refuses a fenced community as an unmapped host.
func (f *ArchiveFence) LookupHost(ctx context.Context, host string) (tenant.CommunityID, error) {
	id, err := f.next.LookupHost(ctx, host)
	if err != nil {
		return id, err
	}
	f.mu.Lock()
	until, ok := f.fenced[id]
	if ok && !f.now().Before(until) {
		delete(f.fenced, id)
		ok = false
	}
	f.mu.Unlock()
	if ok {
		return tenant.CommunityID{}, fmt.Errorf("%w: community archived", tenant.ErrUnmappedHost)
	}
	return id, nil
}

// Invalidate forgets host in the directory behind the fence when it caches
// (has an Invalidate(host string) method); the relay calls it for every
// host of a HostsChanged (see buzz.WithDirectory).
func (f *ArchiveFence) Invalidate(host string) {
	if inv, ok := f.next.(interface{ Invalidate(string) }); ok {
		inv.Invalidate(host)
	}
}

// OnControl is a Handler: it fences community on a DisconnectCommunity or a
// HostsChanged with Archived, lifts its fence on a HostsChanged without
// Archived (unless AliasOnly), and ignores every other message. It never
// blocks.
func (f *ArchiveFence) OnControl(community tenant.CommunityID, m Message) {
	archived := false
	switch m := m.(type) {
	case DisconnectCommunity:
		archived = true
	case HostsChanged:
		if m.AliasOnly {
			return
		}
		archived = m.Archived
	default:
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !archived {
		delete(f.fenced, community)
		return
	}
	now := f.now()
	for id, until := range f.fenced { // keep the map small
		if !now.Before(until) {
			delete(f.fenced, id)
		}
	}
	f.fenced[community] = now.Add(f.ttl)
}
