package buzz

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"github.com/buzzrelay/buzz/apitoken"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/tenant"
)

// conn is one WebSocket connection, bound to one community for its life.
//
// Goroutines: the reader (serve's caller) reads and dispatches messages; the
// writer owns every data write; EVENT handlers and REQ/COUNT queries run on
// their own goroutines, bounded per connection (eventSem, querySem) and, for
// queries, relay-wide. Everything a connection sends goes through its
// outbound queue (out), bounded by Limits.SendQueue: replies block on it
// (backpressure on the client's own requests), live fan-out never does (a
// full queue disconnects). The writer takes every queued message at once
// and writes them with one syscall (see batchConn.writeFrames); the queue
// holds no memory while empty.
type conn struct {
	r         *Relay
	ws        *websocket.Conn
	raw       *batchConn // nil when the upgrade did not go through hijackCapture
	tc        tenant.TenantContext
	addr      netip.Addr // the client's address (Relay.ClientAddr)
	challenge string
	log       *slog.Logger
	limits    *Limits

	ctx    context.Context // cancelled when the connection is torn down
	cancel context.CancelFunc

	rate *rate.Limiter // Limits.MessageRate; used by the reader only

	outMu    sync.Mutex
	out      []frame       // queued messages, oldest first
	outBytes int           // bytes of out and of the messages being written
	writing  int           // messages taken by the writer and not yet written
	room     chan struct{} // closed when the queue has room again; nil unless someone waits
	wake     chan struct{} // (cap 1) the writer has something to do: messages, a ping, finishing

	// The writer waits on wake alone (one channel is a cheaper park and
	// wake-up than a select, paid once per delivery); these say what else
	// it has to do when it wakes.
	pingDue    atomic.Bool   // a keepalive ping is due
	finishing  atomic.Bool   // drain the queue, send the close frame, exit
	writerDone chan struct{} // closed when the writer has exited

	closing    atomic.Bool // stop reading new messages
	reasonOnce sync.Once
	closeCode  int
	closeText  string
	killOnce   sync.Once
	slow       atomic.Bool // cut off for not keeping up

	tasks    sync.WaitGroup // EVENT handlers and queries in flight
	eventSem chan struct{}
	querySem chan struct{}

	mu           sync.Mutex
	subs         map[string]*subscription
	filterBytes  int                        // charged by the open subscriptions (see subscription.bytes)
	pendingBytes int                        // live events held back by replaying subscriptions
	counts       map[string]*countRun       // COUNTs running, by subscription id
	negs         map[string]*negSession     // NIP-77 sessions open, by subscription id (negentropy.go)
	authed       []string                   // pubkeys authenticated with NIP-42, in order
	grants       map[string]*apitoken.Grant // pubkey -> the API token it authenticated with alone (tokens.go)
	typing       map[string]time.Time       // channel (h) -> when this connection's last typing indicator was admitted (typing.go)
	presence     presenceBudget             // this connection's presence announcements (presence.go)

	reader  *channel.Reader        // channel read access (see access.go); nil without channels
	actorPK atomic.Pointer[string] // first authenticated pubkey (traces)
	tracer  trace.Tracer           // isolation conformance trace; nil unless WithTracer
}

// countRun is one COUNT running; cancel ends its store read.
type countRun struct{ cancel context.CancelFunc }

// subscription is one open REQ. Its fields other than id, filters and cancel
// are guarded by conn.mu.
type subscription struct {
	id      string
	prefix  []byte // of its EVENT messages: nostr.AppendEventMessagePrefix
	filters []nostr.Filter
	live    *pubsub.Subscription // as added to the relay's index
	cancel  context.CancelFunc
	bytes   int // size of the REQ, charged against Limits.MaxConnFilterBytes

	replaying    bool             // stored events are still being sent
	pending      []pubsub.Message // live events that arrived during the replay
	pendingBytes int              // bytes of pending's events
}

func newConn(r *Relay, ws *websocket.Conn, raw *batchConn, tc tenant.TenantContext) *conn {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	ctx, cancel := context.WithCancel(context.Background())
	l := &r.cfg.limits
	c := &conn{
		r:          r,
		ws:         ws,
		raw:        raw,
		tc:         tc,
		challenge:  hex.EncodeToString(b[:]),
		log:        r.log.With("community", tc.Community().String()),
		limits:     l,
		ctx:        ctx,
		cancel:     cancel,
		wake:       make(chan struct{}, 1),
		writerDone: make(chan struct{}),
		eventSem:   make(chan struct{}, l.EventConcurrency),
		querySem:   make(chan struct{}, l.QueryConcurrency),
		rate:       rate.NewLimiter(rate.Limit(l.MessageRate), l.MessageBurst),
		subs:       make(map[string]*subscription),
	}
	if r.channels != nil {
		c.reader = r.channels.access.Reader(ctx, tc.Community())
	}
	return c
}

// serve runs the connection until it is closed, then tears it down.
func (c *conn) serve() {
	topic := pubsub.Topic{Community: c.tc.Community()}
	c.r.cfg.broker.Retain(topic)
	defer c.r.cfg.broker.Release(topic)

	go c.writeLoop()
	c.reply(nostr.AppendAuthChallenge(nil, c.challenge))
	c.readLoop()

	// Teardown: no new deliveries, let in-flight EVENTs finish (each gets
	// its OK), then let the writer drain and send the close frame.
	c.dropAllSubs()
	c.dropNegs()
	c.tasks.Wait()
	c.finishing.Store(true)
	c.signalWriter()
	<-c.writerDone
	c.cancel()
	_ = c.ws.Close()
}

// setReason records the close code and text sent when the connection ends;
// the first caller wins.
func (c *conn) setReason(code int, text string) {
	c.reasonOnce.Do(func() {
		c.closeCode, c.closeText = code, text
	})
}

// beginClose asks the connection to close gracefully: it stops reading, and
// the teardown drains in-flight work before the close frame.
func (c *conn) beginClose(code int, text string) {
	c.setReason(code, text)
	c.closing.Store(true)
	_ = c.ws.SetReadDeadline(time.Now())
}

// closeNow closes the connection at once, without draining: a close frame
// is attempted, then the socket is closed, which ends the reader and the
// writer. Safe to call from any goroutine; it may block up to one second.
func (c *conn) closeNow(code int, text string) {
	c.killOnce.Do(func() {
		c.setReason(code, text)
		c.closing.Store(true)
		if c.raw != nil {
			// A flush blocked on this peer holds the socket: make it give up
			// within the second the close frame may take.
			c.raw.interrupt(time.Now().Add(time.Second))
			c.raw.stopData()
		}
		_ = c.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
		_ = c.ws.Close()
	})
}

// extendReadDeadline gives the peer PingInterval+PongTimeout to show life,
// unless the connection is closing.
func (c *conn) extendReadDeadline() {
	_ = c.ws.SetReadDeadline(time.Now().Add(c.limits.PingInterval + c.limits.PongTimeout))
	if c.closing.Load() {
		_ = c.ws.SetReadDeadline(time.Now())
	}
}

func (c *conn) readLoop() {
	c.ws.SetPongHandler(func(string) error {
		c.extendReadDeadline()
		return nil
	})
	c.extendReadDeadline()
	for !c.closing.Load() {
		mt, rd, err := c.ws.NextReader()
		if err != nil {
			return
		}
		c.extendReadDeadline()
		// The message buffer is borrowed for one message at a time, so an
		// idle connection holds none.
		bp, _ := c.r.readBufs.Get().(*[]byte)
		if bp == nil {
			bp = new([]byte)
		}
		*bp, err = readLimited(rd, (*bp)[:0], c.limits.MaxFrameBytes)
		stop := c.handleRead(mt, rd, *bp, err)
		if cap(*bp) <= 64<<10 {
			c.r.readBufs.Put(bp)
		}
		if stop {
			return
		}
	}
}

// handleRead handles one message read by readLoop (buf, read error err) and
// reports whether reading must stop. buf is not used after it returns.
func (c *conn) handleRead(mt int, rd io.Reader, buf []byte, err error) (stop bool) {
	max := c.limits.MaxFrameBytes
	if errors.Is(err, errFrameTooLarge) {
		c.reply(nostr.AppendNotice(nil, "error: frame too large (limit "+strconv.Itoa(max)+" bytes)"))
		c.setReason(websocket.CloseMessageTooBig, "frame too large")
		// Read (a bounded amount of) the rest of the message so that
		// closing the socket does not reset it before the NOTICE and the
		// close frame reach the client.
		_ = c.ws.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, _ = io.CopyN(io.Discard, rd, int64(4*max))
		return true
	}
	if err != nil {
		return true
	}
	if c.closing.Load() {
		return true // read after Shutdown began: not handled, not acknowledged
	}
	if mt == websocket.BinaryMessage && !utf8.Valid(buf) {
		c.reply(nostr.AppendNotice(nil, "invalid: binary frame is not valid UTF-8"))
		return false
	}
	c.handle(buf)
	return false
}

var errFrameTooLarge = errors.New("frame too large")

// readLimited appends the message from rd to buf; errFrameTooLarge when it
// is longer than max bytes.
func readLimited(rd io.Reader, buf []byte, max int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			return buf, errFrameTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// writeLoop owns all data writes and the keepalive pings.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	ping := time.AfterFunc(c.limits.PingInterval, func() {
		c.pingDue.Store(true)
		c.signalWriter()
	})
	defer ping.Stop()
	for range c.wake {
		if c.finishing.Load() {
			c.finishWrites()
			return
		}
		if c.pingDue.Swap(false) {
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.limits.WriteTimeout)); err != nil {
				_ = c.ws.Close()
				return
			}
			ping.Reset(c.limits.PingInterval)
		}
		if !c.writeQueued() {
			return
		}
	}
}

// signalWriter makes sure the writer wakes up after the caller's change of
// pingDue or finishing: it hands the writer a wake-up, or returns once the
// writer has exited.
func (c *conn) signalWriter() {
	select {
	case c.wake <- struct{}{}:
	case <-c.writerDone:
	}
}

// finishWrites drains the queue and sends the close frame.
func (c *conn) finishWrites() {
	for {
		c.outMu.Lock()
		empty := len(c.out) == 0
		c.outMu.Unlock()
		if empty {
			break
		}
		if !c.writeQueued() {
			return
		}
	}
	code, text := websocket.CloseNormalClosure, ""
	c.reasonOnce.Do(func() {}) // freeze the reason (and synchronize with setReason)
	if c.closeCode != 0 {
		code, text = c.closeCode, c.closeText
	}
	_ = c.ws.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(code, text), time.Now().Add(c.limits.WriteTimeout))
}

// writeQueued writes every queued message, as text frames sent together;
// on failure it closes the socket (ending the reader) and reports false.
// The messages stay counted against SendQueue until they are written.
func (c *conn) writeQueued() bool {
	c.outMu.Lock()
	batch := c.out
	c.out = nil
	c.writing = len(batch)
	c.outMu.Unlock()
	ok := c.writeBatch(batch)
	written := 0
	for _, f := range batch {
		written += f.size()
	}
	clear(batch)
	c.outMu.Lock()
	c.writing = 0
	c.outBytes -= written
	if c.out == nil && cap(batch) <= 64 {
		c.out = batch[:0] // reuse a small queue; a large one goes back to the GC
	}
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
	c.outMu.Unlock()
	return ok
}

func (c *conn) writeBatch(batch []frame) bool {
	if len(batch) == 0 {
		return true
	}
	if c.raw != nil {
		if err := c.raw.writeFrames(batch, c.limits.WriteTimeout); err != nil {
			_ = c.ws.Close()
			return false
		}
		return true
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.limits.WriteTimeout))
	for _, f := range batch {
		if err := f.writeTo(c.ws); err != nil {
			_ = c.ws.Close()
			return false
		}
	}
	return true
}

// enqueue adds m to the outbound queue when it has room and wakes the
// writer. When full, it returns the channel closed once there is room.
// The queue has room for a message while it holds fewer than
// Limits.SendQueue messages and m fits in Limits.SendQueueBytes (an empty
// queue takes any message: one message is bounded by what produced it).
func (c *conn) enqueue(m []byte) (queued bool, room <-chan struct{}) {
	n, room := c.enqueueAll([]frame{{msg: m}})
	return n == 1, room
}

// enqueueAll is enqueue for several messages, in order: it queues the
// longest prefix of msgs the queue has room for and wakes the writer once,
// so a batch reaches the socket in one write rather than one wake-up of the
// writer per message. It returns how many it queued and, when not all, the
// channel closed once there is room for more.
func (c *conn) enqueueAll(msgs []frame) (queued int, room <-chan struct{}) {
	c.outMu.Lock()
	if free := c.limits.SendQueue - len(c.out) - c.writing; len(msgs) > 1 && free > 0 {
		c.out = slices.Grow(c.out, min(len(msgs), free)) // once, not doubling per append
	}
	for _, m := range msgs {
		n, size := len(c.out)+c.writing, m.size()
		if n >= c.limits.SendQueue || n > 0 && c.outBytes+size > c.limits.SendQueueBytes {
			if c.room == nil {
				c.room = make(chan struct{})
			}
			room = c.room
			break
		}
		c.out = append(c.out, m)
		c.outBytes += size
		queued++
	}
	c.outMu.Unlock()
	if queued > 0 {
		select {
		case c.wake <- struct{}{}:
		default: // the writer is already due to look at the queue
		}
	}
	return queued, room
}

// reply queues a message the client asked for (OK, CLOSED, EOSE, NOTICE,
// COUNT, stored events). It waits for room in the queue — backpressure on
// the client's own requests — and gives up only when the writer is gone.
func (c *conn) reply(m []byte) bool {
	for {
		queued, room := c.enqueue(m)
		if queued {
			return true
		}
		select {
		case <-room:
		case <-c.writerDone:
			return false
		}
	}
}

// replyCtx is reply that also gives up when ctx ends.
func (c *conn) replyCtx(ctx context.Context, m []byte) bool {
	return c.replyAllCtx(ctx, []frame{{msg: m}})
}

// replyAllCtx is replyCtx for several messages, queued in order with as
// few wake-ups of the writer as the queue's room allows.
func (c *conn) replyAllCtx(ctx context.Context, msgs []frame) bool {
	for len(msgs) > 0 {
		if ctx.Err() != nil {
			return false
		}
		n, room := c.enqueueAll(msgs)
		msgs = msgs[n:]
		if len(msgs) == 0 {
			return true
		}
		select {
		case <-room:
		case <-c.writerDone:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// tryQueue queues a live message without blocking; a full queue means the
// client does not keep up, and it is disconnected (close 1008).
func (c *conn) tryQueue(f frame) {
	if n, _ := c.enqueueAll([]frame{f}); n != 1 {
		c.cutOff()
	}
}

// cutOff disconnects a client that does not keep up (close 1008), once,
// without blocking the caller.
func (c *conn) cutOff() {
	if c.slow.CompareAndSwap(false, true) {
		c.r.cfg.metrics.SlowReaderDisconnected(c.tc)
		c.log.Info("buzz: disconnecting a slow reader")
		go c.closeNow(websocket.ClosePolicyViolation, "relay: connection too slow")
	}
}

// isAuthed reports whether the connection authenticated as pubkey.
func (c *conn) isAuthed(pubkey string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.authed {
		if p == pubkey {
			return true
		}
	}
	return false
}

// authenticated reports whether the connection authenticated at all.
func (c *conn) authenticated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.authed) > 0
}
