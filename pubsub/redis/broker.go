package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/tenant"
)

var (
	// ErrUnavailable is returned (wrapped) while the broker has lost Redis.
	ErrUnavailable = errors.New("pubsub/redis: redis unavailable")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("pubsub/redis: broker closed")
)

var _ pubsub.Broker = (*Broker)(nil)

// Broker is a pubsub.Broker and a control.Bus over Redis. It is safe for
// concurrent use. Create it with New and Close it when done.
type Broker struct {
	cfg    config
	log    *slog.Logger
	client rueidis.Client
	origin string // random id of this process, stamped on control messages

	echo *echoMarks // what this broker published, to drop the echo

	lmu       sync.Mutex
	lnext     uint64
	listeners atomic.Pointer[[]listener]
	ctrl      control.Handlers

	mu    sync.RWMutex
	chans map[string]*chanState // desired channels by Redis channel name
	wake  chan struct{}         // cap 1: the desired set changed

	healthy atomic.Bool
	closed  atomic.Bool
	lastErr atomic.Pointer[error]
	ready   chan struct{} // closed after the first successful connection

	stop context.CancelFunc
	done chan struct{}
}

type listener struct {
	id uint64
	fn func(pubsub.Message)
}

// chanState is one desired Redis channel. Its identity fields are immutable;
// the rest is guarded by Broker.mu.
type chanState struct {
	name          string
	community     tenant.CommunityID
	communityText string
	control       bool
	deployment    bool // the deployment-wide control topic: messages of any community

	refs       int
	timer      stopper       // pending debounced unsubscribe
	subscribed bool          // confirmed on the current connection
	waiters    chan struct{} // closed when subscribed (or the attempt ends)
}

// New connects to the Redis at redisURL (redis://, rediss:// or unix://, as
// rueidis.ParseURL reads them) and starts the subscription manager. It
// returns once the subscription connection is established, or fails when
// ctx ends first or Redis cannot be reached. ctx bounds only this start-up;
// the broker lives until Close.
func New(ctx context.Context, redisURL string, opts ...Option) (*Broker, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("pubsub/redis: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	copt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("pubsub/redis: invalid redis URL: %w", err)
	}
	copt.ClientName = cfg.clientName
	copt.DisableCache = true
	copt.DisableRetry = true // fail fast; the caller decides
	client, err := rueidis.NewClient(copt)
	if err != nil {
		return nil, fmt.Errorf("pubsub/redis: connect: %w", err)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	b := &Broker{
		cfg:    cfg,
		log:    cfg.logger.With("component", "pubsub/redis"),
		client: client,
		origin: hex.EncodeToString(id[:]),
		echo:   newEchoMarks(cfg.echoSize, cfg.echoTTL, time.Now),
		chans:  make(map[string]*chanState),
		wake:   make(chan struct{}, 1),
		ready:  make(chan struct{}),
		done:   make(chan struct{}),
	}
	b.listeners.Store(&[]listener{})
	// The deployment-wide control topic is subscribed for the broker's
	// whole life (control.DeploymentWide).
	b.chans[b.directoryChannel()] = &chanState{name: b.directoryChannel(), control: true, deployment: true, refs: 1}
	runCtx, stop := context.WithCancel(context.Background())
	b.stop = stop
	go b.run(runCtx)
	select {
	case <-b.ready:
		return b, nil
	case <-ctx.Done():
		_ = b.Close()
		if p := b.lastErr.Load(); p != nil {
			return nil, fmt.Errorf("pubsub/redis: start: %w (last error: %v)", ctx.Err(), *p)
		}
		return nil, fmt.Errorf("pubsub/redis: start: %w", ctx.Err())
	}
}

// Client returns the broker's Redis client, so that other Redis-backed parts
// of a pod (rate limiter, replay guard) share its connections. It must not
// be closed by the caller.
func (b *Broker) Client() rueidis.Client { return b.client }

// Namespace returns the key namespace.
func (b *Broker) Namespace() string { return b.cfg.namespace }

// Close stops the broker and closes its Redis connections. Listeners are no
// longer called once Close returns.
func (b *Broker) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.healthy.Store(false)
	b.stop()
	<-b.done
	b.mu.Lock()
	for _, st := range b.chans {
		if st.timer != nil {
			st.timer.Stop()
		}
	}
	b.chans = map[string]*chanState{}
	b.mu.Unlock()
	b.client.Close()
	return nil
}

// Healthy reports whether the subscription connection is up and every
// retained topic is subscribed.
func (b *Broker) Healthy() bool { return b.healthy.Load() && !b.closed.Load() }

// Ready returns nil when the broker can carry messages: it is open, healthy
// and Redis answers a PING within ctx. It is meant for a readiness endpoint.
func (b *Broker) Ready(ctx context.Context) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if !b.healthy.Load() {
		if p := b.lastErr.Load(); p != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, *p)
		}
		return ErrUnavailable
	}
	if err := b.client.Do(ctx, b.client.B().Ping().Build()).Error(); err != nil {
		return fmt.Errorf("%w: ping: %v", ErrUnavailable, err)
	}
	return nil
}

// Listen registers fn to receive every message delivered to this process:
// local publishes at once, other pods' publishes on retained topics. fn must
// not block; it runs on the publishing goroutine or the Redis receive
// goroutine.
func (b *Broker) Listen(fn func(pubsub.Message)) (stop func()) {
	b.lmu.Lock()
	id := b.lnext
	b.lnext++
	old := *b.listeners.Load()
	next := make([]listener, len(old), len(old)+1)
	copy(next, old)
	next = append(next, listener{id: id, fn: fn})
	b.listeners.Store(&next)
	b.lmu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.lmu.Lock()
			defer b.lmu.Unlock()
			old := *b.listeners.Load()
			next := make([]listener, 0, len(old))
			for _, l := range old {
				if l.id != id {
					next = append(next, l)
				}
			}
			b.listeners.Store(&next)
		})
	}
}

func (b *Broker) deliver(msg pubsub.Message) {
	for _, l := range *b.listeners.Load() {
		l.fn(msg)
	}
}

// Publish delivers msg to local listeners at once, then publishes it on the
// topic the router (WithTopicFunc) picks, for the other pods. While Redis is unavailable
// it returns an error wrapping ErrUnavailable without waiting; a failed
// PUBLISH returns its error. In both cases local delivery has happened.
func (b *Broker) Publish(ctx context.Context, msg pubsub.Message) error {
	if msg.Community.IsZero() {
		return errors.New("pubsub/redis: message has no community")
	}
	if msg.Event == nil || len(msg.Event.ID) != eventIDLen {
		return errors.New("pubsub/redis: message has no event id")
	}
	if b.closed.Load() {
		return ErrClosed
	}
	if len(msg.Raw) == 0 {
		msg.Raw = msg.Event.AppendJSON(nil)
	}
	b.deliver(msg)
	if !b.healthy.Load() {
		return ErrUnavailable
	}
	t := b.cfg.topicOf(msg)
	if t.Community != msg.Community {
		return errors.New("pubsub/redis: topic router changed the community")
	}
	ch := b.topicChannel(t)
	key := echoKey(msg.Community, msg.Event.ID)
	b.echo.mark(key) // before PUBLISH: the echo can only arrive after it
	payload := appendEnvelope(make([]byte, 0, envOverhead+len(msg.Raw)), msg.Community, msg.Event.ID, msg.Raw)
	pctx, cancel := context.WithTimeout(ctx, b.cfg.publishTimeout)
	defer cancel()
	err := b.client.Do(pctx, b.client.B().Publish().Channel(ch).Message(rueidis.BinaryString(payload)).Build()).Error()
	if err != nil {
		b.echo.take(key)
		return fmt.Errorf("pubsub/redis: publish: %w", err)
	}
	return nil
}

// CommunityTopic routes every message to its community-wide topic. It is the
// default router: it matches a relay that retains one community-wide topic
// per connection.
func CommunityTopic(msg pubsub.Message) pubsub.Topic {
	return pubsub.Topic{Community: msg.Community}
}

// HTagTopic routes a message to the channel named by its event's first "h"
// tag, or to the community-wide topic when there is none. It suits a relay
// that resolves "h" inside the bound community before storing the event and
// retains a channel's topic for every subscription reading that channel.
func HTagTopic(msg pubsub.Message) pubsub.Topic {
	t := pubsub.Topic{Community: msg.Community}
	if msg.Event != nil {
		for _, tag := range msg.Event.Tags {
			if len(tag) >= 2 && tag[0] == "h" {
				t.Channel = tag[1]
				break
			}
		}
	}
	return t
}

// echoKey is the local-echo mark of one event of one community.
func echoKey(c tenant.CommunityID, id string) string {
	var k [16 + eventIDLen]byte
	u := c.UUID()
	copy(k[:16], u[:])
	copy(k[16:], id)
	return string(k[:])
}

// topicChannel returns the Redis channel name of t.
func (b *Broker) topicChannel(t pubsub.Topic) string {
	if t.Channel == "" {
		return b.cfg.namespace + ":" + t.Community.String() + ":global"
	}
	return b.cfg.namespace + ":" + t.Community.String() + ":channel:" + t.Channel
}

func (b *Broker) controlChannel(c tenant.CommunityID) string {
	return b.cfg.namespace + ":" + c.String() + ":control"
}

// directoryChannel is the deployment-wide control topic, which every broker
// subscribes for its whole life (control.DeploymentWide messages).
func (b *Broker) directoryChannel() string { return b.cfg.namespace + ":directory" }

// onMessage handles one message from the subscription connection. rueidis
// calls it sequentially.
func (b *Broker) onMessage(m rueidis.PubSubMessage) {
	b.mu.RLock()
	st := b.chans[m.Channel]
	b.mu.RUnlock()
	if st == nil {
		return // arrived after we stopped retaining the topic
	}
	if st.control {
		b.onControl(st, m.Message)
		return
	}
	env, err := parseEnvelope(m.Message)
	if err != nil {
		b.log.Warn("dropping malformed message", "channel", m.Channel, "err", err)
		return
	}
	if env.community != st.communityText {
		b.log.Error("dropping message whose community differs from its topic's", "channel", m.Channel)
		return
	}
	key := echoKey(st.community, env.id)
	if b.echo.take(key) {
		return // our own message: already delivered locally
	}
	raw := []byte(env.raw)
	ev, err := nostr.ParseEvent(raw)
	if err != nil {
		b.log.Warn("dropping message with an unparsable event", "channel", m.Channel, "err", err)
		return
	}
	if ev.ID != env.id {
		b.log.Warn("dropping message whose event id differs from its envelope's", "channel", m.Channel)
		return
	}
	b.deliver(pubsub.Message{Community: st.community, Event: ev, Raw: raw})
}
