package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/tenant"
)

// communityKindsTTL bounds how long a community's kind allow-list setting
// is reused: a change (on any process) holds everywhere within it.
const communityKindsTTL = 2 * time.Second

// communityKindsEntries bounds the communities whose allow-list setting is
// cached at once (ttlcache.Config.MaxEntries sizes the cache's memory).
const communityKindsEntries = 10_000

// kindsFor returns the kind allow-list of community c: its own setting
// (Config.CommunityKinds) when it has one, else the relay's (Config.Kinds).
// A stored setting that no longer parses refuses every kind but is logged:
// the store validated it when it was set.
func (p *Pipeline) kindsFor(ctx context.Context, c tenant.CommunityID) (messaging.Kinds, error) {
	if p.cfg.CommunityKinds == nil {
		return p.cfg.Kinds, nil
	}
	u := c.UUID()
	k, err := p.communityKinds.Load(string(u[:]), func() (communityKinds, error) {
		s, err := p.cfg.CommunityKinds.CommunityKinds(ctx, c)
		if err != nil {
			return communityKinds{}, err
		}
		if s == "" {
			return communityKinds{}, nil
		}
		list, err := messaging.ParseKinds(s)
		if err != nil {
			return communityKinds{}, fmt.Errorf("stored setting %q: %w", s, err)
		}
		return communityKinds{set: true, list: list}, nil
	})
	if err != nil {
		return messaging.Kinds{}, err
	}
	if !k.set {
		return p.cfg.Kinds, nil
	}
	return k.list, nil
}

// communityKinds is one community's cached setting: set is false when it
// follows the relay's list.
type communityKinds struct {
	set  bool
	list messaging.Kinds
}

// ForgetCommunityKinds drops c's cached kind allow-list setting, after a
// change made through this process.
func (p *Pipeline) ForgetCommunityKinds(c tenant.CommunityID) {
	if p.communityKinds != nil {
		u := c.UUID()
		p.communityKinds.Del(string(u[:]))
	}
}
