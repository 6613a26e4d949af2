package buzz

// Running several relay processes ("pods") as one relay: the shared rate
// limiter, the control bus that carries per-community state changes to
// every pod, and presence (kind 20001) kept where every pod can read it.
// A single process needs none of this configured: the defaults are an
// in-process control bus, no rate limit and no presence store.
//
// A process receives a community's control messages while it has interest
// in the community: every connection retains its community's broker topic
// for its whole life, and the Redis broker subscribes a community's control
// topic while any of its topics is retained, so no separate
// RetainCommunity is needed.
//
// Presence is counted per process: the status is cleared when the last
// connection of this process on which the pubkey announced presence
// closes, even if the pubkey is still connected to another process; its
// clients re-announce (the status also expires after 180 s).

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/tenant"
)

// Presence records the presence statuses of a community's pubkeys where
// every relay process can read them. *redis.Broker (package pubsub/redis)
// implements it.
type Presence interface {
	// SetPresence records status for pubkey in community for ttl (<= 0: the
	// implementation's default); status "offline" clears it.
	SetPresence(ctx context.Context, community tenant.CommunityID, pubkey, status string, ttl time.Duration) error
	// ClearPresence forgets pubkey's status in community.
	ClearPresence(ctx context.Context, community tenant.CommunityID, pubkey string) error
}

// AccessChangeHook is told that access in a community changed: a
// control.MembershipChanged or control.VisibilityChanged, published by any
// process (this one included). It runs on the control bus's delivering
// goroutine and must not block.
type AccessChangeHook = func(community tenant.CommunityID, m control.Message)

// ControlHook sees every control message of any community, whichever
// process published it (this one included), before the relay acts on it.
// It runs on the control bus's delivering goroutine and must not block.
type ControlHook = func(community tenant.CommunityID, m control.Message)

// clusterConfig is the multi-process part of config.
type clusterConfig struct {
	limiter     ratelimit.Limiter
	tier        ingest.TierFunc
	bus         control.Bus
	presence    Presence
	noPresence  bool
	accessHooks []AccessChangeHook
	ctrlHooks   []ControlHook
	pod         string // WithPod
	podVersion  string
}

// WithRateLimiter admits every EVENT (stored or ephemeral) through l, per
// community and author, class ratelimit.ClassEvent, after its signature
// was verified and before it is stored or published. Over quota the client
// gets OK false "rate-limited: …"; when l cannot decide (for example Redis
// is unreachable) the event is refused with l's "rate-limited: shared
// admission unavailable", never let through. Default: no limit.
func WithRateLimiter(l ratelimit.Limiter) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("buzz: WithRateLimiter: nil limiter")
		}
		c.cluster.limiter = l
		return nil
	}
}

// WithRateLimitTier sets how an author's tier is chosen (default: everyone
// is ratelimit.TierHuman). It has no effect without WithRateLimiter.
func WithRateLimitTier(fn ingest.TierFunc) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("buzz: WithRateLimitTier: nil func")
		}
		c.cluster.tier = fn
		return nil
	}
}

// WithControlBus sets the bus that carries control messages between relay
// processes (see Relay.PublishControl). Default: the broker when it is a
// control.Bus (as the Redis broker is), else an in-process control.Local.
func WithControlBus(b control.Bus) Option {
	return func(c *config) error {
		if b == nil {
			return errors.New("buzz: WithControlBus: nil bus")
		}
		c.cluster.bus = b
		return nil
	}
}

// WithPresence sets where presence (kind 20001) is recorded. An accepted
// presence event sets its author's status; when the last connection of
// this process on which a pubkey announced presence closes, the status is
// cleared. Default: the broker when it implements Presence (the Redis
// broker does), else presence is not recorded (kind 20001 events are still
// delivered live). A nil p turns recording off.
func WithPresence(p Presence) Option {
	return func(c *config) error {
		c.cluster.presence = p
		c.cluster.noPresence = p == nil
		return nil
	}
}

// WithAccessChangeHook adds a hook called for every control.MembershipChanged
// and control.VisibilityChanged of any community, whichever process
// published it: the place to drop cached access decisions and close
// subscriptions a pubkey may no longer read. Hooks run in order.
func WithAccessChangeHook(fn AccessChangeHook) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("buzz: WithAccessChangeHook: nil func")
		}
		c.cluster.accessHooks = append(c.cluster.accessHooks, fn)
		return nil
	}
}

// WithControlHook adds a hook called for every control message (see
// ControlHook), for example to drop an archived community from an
// embedder's own caches. Hooks run in order.
func WithControlHook(fn ControlHook) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("buzz: WithControlHook: nil func")
		}
		c.cluster.ctrlHooks = append(c.cluster.ctrlHooks, fn)
		return nil
	}
}

// WithPod names this relay process ("pod") and the version it runs. A
// named relay announces itself on the control bus when New returns
// (control.PodJoined) and when Shutdown begins (control.PodLeft); every
// other relay on the bus logs them at INFO, "buzz: pod joined" and
// "buzz: pod left", with the pod's name and version. Relays log the
// announcements of others whether or not they are named themselves. name:
// 1 to 128 bytes, no whitespace or control characters; version: at most
// 128 bytes, no control characters.
func WithPod(name, version string) Option {
	return func(c *config) error {
		if name == "" || len(name) > 128 || strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return errors.New("buzz: WithPod: the name must be 1 to 128 bytes without whitespace or control characters")
		}
		if len(version) > 128 || strings.IndexFunc(version, unicode.IsControl) >= 0 {
			return errors.New("buzz: WithPod: the version must be at most 128 bytes without control characters")
		}
		c.cluster.pod, c.cluster.podVersion = name, version
		return nil
	}
}

// podAnnounceTimeout bounds the publication of a pod's arrival or
// departure.
const podAnnounceTimeout = 2 * time.Second

// presenceTTL is how long a recorded presence lasts without a new
// announcement; presenceOpTimeout bounds each presence write.
const (
	presenceTTL       = 180 * time.Second
	presenceOpTimeout = 2 * time.Second
)

// clusterState is the Relay's multi-process state.
type clusterState struct {
	bus      control.Bus
	presence Presence
	hooks    []AccessChangeHook
	ctrl     []ControlHook
	stopCtrl func()

	ctx    context.Context // ends when the relay shuts down
	cancel context.CancelFunc
	wg     sync.WaitGroup // control actions in flight

	mu     sync.Mutex
	own    map[ownKey]int                // access messages this process is announcing
	counts map[presenceKey]int           // connections per announced pubkey
	byConn map[*conn]map[string]struct{} // pubkeys announced per connection
}

// ownKey names an access message this process already applied and is
// publishing (see announce).
type ownKey struct {
	community tenant.CommunityID
	m         control.Message
}

type presenceKey struct {
	community tenant.CommunityID
	pubkey    string
}

// startCluster wires the control bus, presence and the health endpoints.
// New calls it once the broker listener runs.
func (r *Relay) startCluster() {
	cc := r.cfg.cluster
	cs := &clusterState{
		bus:    cc.bus,
		hooks:  cc.accessHooks,
		ctrl:   cc.ctrlHooks,
		own:    make(map[ownKey]int),
		counts: make(map[presenceKey]int),
		byConn: make(map[*conn]map[string]struct{}),
	}
	if cs.bus == nil {
		if b, ok := r.cfg.broker.(control.Bus); ok {
			cs.bus = b
		} else {
			cs.bus = &control.Local{}
		}
	}
	switch {
	case cc.presence != nil:
		cs.presence = cc.presence
	case !cc.noPresence:
		cs.presence, _ = r.cfg.broker.(Presence)
	}
	cs.ctx, cs.cancel = context.WithCancel(context.Background())
	r.cl = cs
	cs.stopCtrl = cs.bus.ListenControl(r.onControl)
	if cc.pod != "" {
		m := control.PodJoined{Pod: cc.pod, Version: cc.podVersion}
		cs.goAction(func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, podAnnounceTimeout)
			defer cancel()
			if err := cs.bus.PublishControl(ctx, control.Deployment(), m); err != nil && ctx.Err() == nil {
				r.log.Warn("buzz: announce pod", "pod", m.Pod, "err", err)
			}
		})
	}
}

// announceLeaving tells the other pods this one is shutting down
// (WithPod). Shutdown calls it before it stops listening.
func (r *Relay) announceLeaving(ctx context.Context) {
	cc := r.cfg.cluster
	if cc.pod == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), podAnnounceTimeout)
	defer cancel()
	m := control.PodLeft{Pod: cc.pod, Version: cc.podVersion}
	if err := r.cl.bus.PublishControl(ctx, control.Deployment(), m); err != nil {
		r.log.Warn("buzz: announce pod leaving", "pod", m.Pod, "err", err)
	}
}

// stopCluster stops listening to control messages and waits for the
// actions they started. Shutdown calls it.
func (r *Relay) stopCluster() {
	r.cl.stopCtrl()
	r.cl.cancel()
	r.cl.wg.Wait()
}

// PublishControl sends m to every relay process serving community,
// this one included (its handlers run before PublishControl returns). Use
// it after changing state other processes act on: control.HostsChanged after
// provisioning, archiving or unarchiving (every process's host cache forgets
// the hosts; it reaches every process, see control.DeploymentWide),
// control.DisconnectCommunity after archiving, control.DisconnectPubkey after a ban,
// control.MembershipChanged / control.VisibilityChanged after an access
// change. An error means other processes may not have been told (this one
// has been).
func (r *Relay) PublishControl(ctx context.Context, community tenant.CommunityID, m control.Message) error {
	return r.cl.bus.PublishControl(ctx, community, m)
}

// onControl acts on one control message, from this process or another. It
// never blocks: disconnects run on their own goroutines.
func (r *Relay) onControl(community tenant.CommunityID, m control.Message) {
	for _, h := range r.cl.ctrl {
		h(community, m)
	}
	switch m := m.(type) {
	case control.DisconnectCommunity:
		// A stream ends with the message's reason, shown to its client;
		// a connection gets the close frame of DisconnectCommunity.
		for _, s := range r.streamsOf(community) {
			s.end(cmp.Or(m.Reason, CloseCommunityGoneText))
		}
		r.cl.goAction(func(ctx context.Context) {
			if err := r.DisconnectCommunity(ctx, community); err != nil && ctx.Err() == nil {
				r.log.Warn("buzz: control: disconnect community", "community", community.String(), "err", err)
			}
		})
	case control.DisconnectPubkey:
		r.disconnectPubkey(community, m.PubKey, closeReason(m.Reason))
	case control.MembershipChanged, control.VisibilityChanged:
		r.accessChanged(community, m)
	case control.HostsChanged:
		if inv, ok := r.cfg.directory.(hostInvalidator); ok {
			for _, h := range m.Hosts {
				inv.Invalidate(h)
			}
		}
		hosts := m.Hosts
		r.cl.goAction(func(ctx context.Context) { r.closeUnboundHosts(ctx, community, hosts) })
	case control.RestrictionChanged:
		r.restrictionChanged(community, m)
	case control.PolicyChanged:
		r.policyChanged(community, m)
	case control.TokenRevoked:
		r.tokenRevoked(community, m.Token)
	case control.PodJoined:
		if m.Pod != r.cfg.cluster.pod {
			r.log.Info("buzz: pod joined", "pod", m.Pod, "version", m.Version)
		}
	case control.PodLeft:
		if m.Pod != r.cfg.cluster.pod {
			r.log.Info("buzz: pod left", "pod", m.Pod, "version", m.Version)
		}
	}
}

// hostInvalidator is a caching directory (see WithDirectory).
type hostInvalidator interface{ Invalidate(host string) }

// accessChanged is the single entry point for membership and visibility
// changes: it runs the WithAccessChangeHook hooks, then applies the change
// to this process's connections (applyAccessMessage) — except for the local
// delivery of a message this process is announcing after it already applied
// the change itself (announce). Cached access is marked stale at once;
// recomputing it and closing revoked subscriptions runs on its own
// goroutine, as a handler must not block.
func (r *Relay) accessChanged(community tenant.CommunityID, m control.Message) {
	for _, h := range r.cl.hooks {
		h(community, m)
	}
	if r.channels == nil || r.cl.consumeOwn(community, m) {
		return
	}
	switch m := m.(type) {
	case control.MembershipChanged:
		if m.Channel == "" {
			if m.PubKey != "" {
				r.cl.goAction(func(ctx context.Context) { r.revokeMember(ctx, community, m.PubKey) })
			}
			return
		}
		id, ok := channel.ParseID(m.Channel)
		if !ok {
			return
		}
		r.channels.access.ChannelChanged(community, id, nil)
		if m.PubKey == "" {
			return
		}
		r.cl.goAction(func(ctx context.Context) { r.revokeChannel(ctx, community, id, false, []string{m.PubKey}) })
	case control.VisibilityChanged:
		id, ok := channel.ParseID(m.Channel)
		if !ok {
			return
		}
		r.channels.access.ChannelChanged(community, id, nil)
		r.cl.goAction(func(ctx context.Context) { r.revokeChannel(ctx, community, id, true, nil) })
	}
}

// announce publishes an access message about a change this process has
// already applied to its connections, so that the other processes apply it
// too. Its local delivery runs the hooks but is not applied a second time.
// A failed publish is logged: the other processes then see the change
// within accessTTL.
func (r *Relay) announce(ctx context.Context, community tenant.CommunityID, m control.Message) {
	k := ownKey{community, m}
	r.cl.mu.Lock()
	r.cl.own[k]++
	r.cl.mu.Unlock()
	// The change is committed: tell the others even if the client left.
	err := r.cl.bus.PublishControl(context.WithoutCancel(ctx), community, m)
	// A bus that delivers locally later than PublishControl returns gets the
	// message applied twice, which is harmless; the mark must not outlive
	// this call, or a later message from another process would be dropped.
	r.cl.consumeOwn(community, m)
	if err != nil {
		r.log.WarnContext(ctx, "buzz: publish access change", "community", community.String(), "type", m.Type(), "err", err)
	}
}

// consumeOwn reports whether m is the local delivery of a message announce
// is publishing, and forgets that mark.
func (cs *clusterState) consumeOwn(community tenant.CommunityID, m control.Message) bool {
	k := ownKey{community, m}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := cs.own[k]
	if n == 0 {
		return false
	}
	if n == 1 {
		delete(cs.own, k)
	} else {
		cs.own[k] = n - 1
	}
	return true
}

func (cs *clusterState) goAction(fn func(ctx context.Context)) {
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		fn(cs.ctx)
	}()
}

// defaultDisconnectReason is the close reason sent for a
// control.DisconnectPubkey without one.
const defaultDisconnectReason = "relay: disconnected by the operator"

// closeReason bounds a close frame's reason (at most 123 bytes, valid UTF-8).
func closeReason(s string) string {
	if s == "" {
		return defaultDisconnectReason
	}
	if len(s) > 123 {
		s = strings.ToValidUTF8(s[:123], "")
	}
	return s
}

// disconnectPubkey closes, gracefully, every session of community on this
// process that authenticated as pubkey or, for a connection, announced its
// presence.
func (r *Relay) disconnectPubkey(community tenant.CommunityID, pubkey, reason string) {
	if pubkey == "" {
		return
	}
	for _, s := range r.sessionsOf(community) {
		if s.isAuthed(pubkey) || r.cl.announced(s, pubkey) {
			s.disconnect(websocket.ClosePolicyViolation, reason)
		}
	}
}

// announced reports whether s is a connection on which pubkey announced
// its presence.
func (cs *clusterState) announced(s session, pubkey string) bool {
	c, ok := s.(*conn)
	if !ok {
		return false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	_, ok = cs.byConn[c][pubkey]
	return ok
}

// afterIngest runs the relay's side effects of an accepted event before its
// OK is sent: presence announcements are recorded.
func (r *Relay) afterIngest(c *conn, ev *nostr.Event, out ingest.Outcome) {
	if !out.OK || ev.Kind != nostr.KindPresence || r.cl.presence == nil {
		return
	}
	status, ok := presenceStatus(ev.Content)
	if !ok {
		return
	}
	key := presenceKey{community: c.tc.Community(), pubkey: ev.PubKey}
	r.cl.mu.Lock()
	pks := r.cl.byConn[c]
	if pks == nil {
		pks = make(map[string]struct{})
		r.cl.byConn[c] = pks
	}
	if _, seen := pks[ev.PubKey]; !seen {
		pks[ev.PubKey] = struct{}{}
		r.cl.counts[key]++
	}
	r.cl.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, presenceOpTimeout)
	defer cancel()
	if err := r.cl.presence.SetPresence(ctx, key.community, key.pubkey, status, presenceTTL); err != nil {
		c.log.Warn("buzz: record presence", "err", err)
	}
}

// connClosed forgets a closed connection: a pubkey whose last announcing
// connection on this process it was has its presence cleared.
func (r *Relay) connClosed(c *conn) {
	r.cl.mu.Lock()
	pks := r.cl.byConn[c]
	delete(r.cl.byConn, c)
	var clear []string
	for pk := range pks {
		key := presenceKey{community: c.tc.Community(), pubkey: pk}
		if r.cl.counts[key]--; r.cl.counts[key] <= 0 {
			delete(r.cl.counts, key)
			clear = append(clear, pk)
		}
	}
	r.cl.mu.Unlock()
	for _, pk := range clear {
		ctx, cancel := context.WithTimeout(context.Background(), presenceOpTimeout)
		if err := r.cl.presence.ClearPresence(ctx, c.tc.Community(), pk); err != nil {
			c.log.Warn("buzz: clear presence", "err", err)
		}
		cancel()
	}
}

// presenceStatus reads a kind 20001 content: a bare status or JSON
// {"status": "…"}; 1-64 printable bytes.
func presenceStatus(content string) (string, bool) {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "{") {
		var v struct {
			Status string `json:"status"`
		}
		if json.Unmarshal([]byte(s), &v) != nil {
			return "", false
		}
		s = v.Status
	}
	if s == "" || len(s) > 64 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return "", false
		}
	}
	return s, true
}
