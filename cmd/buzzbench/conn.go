package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/gorilla/websocket"
)

// okResult is a relay's answer to an EVENT or AUTH.
type okResult struct {
	OK  bool
	Msg string
	At  time.Time // when the OK was read
}

// subHandler receives the messages of one subscription (REQ or COUNT). Its
// functions run on the connection's read goroutine and must not block.
type subHandler struct {
	event  func(id string, at time.Time)
	eose   func(at time.Time)
	closed func(msg string, at time.Time)
	count  func(n int64, at time.Time)
}

// errConnClosed is returned for work pending on a connection that ended.
var errConnClosed = errors.New("connection closed")

// conn is one client WebSocket to the relay under test. Writes are
// serialized; one goroutine reads and routes every message. Events are not
// parsed beyond their id, and signatures are never verified: the client
// must cost the shared CPU as little as possible.
type conn struct {
	ws  *websocket.Conn
	url string

	wmu  sync.Mutex
	wbuf []byte

	mu            sync.Mutex
	oks           map[string]func(okResult)
	subs          map[string]*subHandler
	challenge     string
	challenged    chan struct{} // closed at the first AUTH challenge
	challengeOnce sync.Once
	authed        map[string]bool // pubkeys the relay accepted in AUTH

	notices  atomic.Int64
	done     chan struct{}
	readErr  error
	nextSub  atomic.Int64
	readBuf  bytes.Buffer
	stopRead bool // slow reader: never read
}

type dialOptions struct {
	authKey *nostr.SecretKey // AUTH as this key when challenged on connect; nil: only on demand
	// requireAuth: with authKey, dial fails unless the relay challenges
	// (within 5 s) and accepts the AUTH.
	requireAuth bool
	noRead      bool // never read (slow reader)
	rcvBuf      int  // SO_RCVBUF, 0 for the default
	// relayURL, when set, is the relay the connection speaks to while url
	// only names the address to reach it at (one pod of a deployment, as a
	// load balancer would pick): its host is sent as the Host header and
	// it is the AUTH event's relay tag.
	relayURL string
}

// dial opens a connection. It does not wait for an AUTH challenge.
func dial(ctx context.Context, url string, o dialOptions) (*conn, error) {
	d := websocket.Dialer{
		HandshakeTimeout:  10 * time.Second,
		EnableCompression: false,
		ReadBufferSize:    16 << 10,
		WriteBufferSize:   16 << 10,
	}
	if o.rcvBuf > 0 {
		nd := net.Dialer{Timeout: 10 * time.Second}
		d.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := nd.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(o.rcvBuf)
			}
			return c, nil
		}
	}
	hdr := http.Header{}
	relayURL := url
	if o.relayURL != "" {
		u, err := neturl.Parse(o.relayURL)
		if err != nil {
			return nil, fmt.Errorf("relay URL %q: %w", o.relayURL, err)
		}
		hdr.Set("Host", u.Host)
		relayURL = o.relayURL
	}
	ws, resp, err := d.DialContext(ctx, url, hdr)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial %s: %w (HTTP %d)", url, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	ws.SetReadLimit(64 << 20)
	c := &conn{
		ws: ws, url: relayURL, oks: map[string]func(okResult){}, subs: map[string]*subHandler{},
		done: make(chan struct{}), challenged: make(chan struct{}), stopRead: o.noRead,
		authed: map[string]bool{},
	}
	if o.noRead {
		return c, nil
	}
	go c.readLoop()
	if o.authKey != nil {
		// Relays that challenge do so on connect: answer before any work
		// so that no EVENT or REQ meets "auth-required:".
		select {
		case <-c.challenged:
			if err := c.authenticate(ctx, *o.authKey); err != nil {
				c.Close()
				return nil, fmt.Errorf("NIP-42 AUTH: %w", err)
			}
		case <-time.After(challengeWait):
			if o.requireAuth {
				if err := c.authenticate(ctx, *o.authKey); err != nil {
					c.Close()
					return nil, fmt.Errorf("NIP-42 AUTH required by -auth-per-author: %w", err)
				}
			}
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		}
	}
	return c, nil
}

// challengeWait is how long dial waits for an AUTH challenge.
const challengeWait = 300 * time.Millisecond

// Close closes the socket and waits for the reader to stop.
func (c *conn) Close() {
	c.ws.Close()
	if !c.stopRead {
		<-c.done
	}
}

func (c *conn) write(build func([]byte) []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = build(c.wbuf[:0])
	_ = c.ws.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, c.wbuf)
}

// sendEvent publishes raw (whose id is id) and calls cb with the OK, or with
// a failed okResult whose Msg starts with "closed:" if the connection ends
// first. cb runs on the read goroutine.
func (c *conn) sendEvent(id string, raw []byte, cb func(okResult)) error {
	c.mu.Lock()
	if c.readErr != nil {
		c.mu.Unlock()
		return errConnClosed
	}
	c.oks[id] = cb
	c.mu.Unlock()
	err := c.write(func(b []byte) []byte { return nostr.AppendEventEnvelope(b, raw) })
	if err != nil {
		c.mu.Lock()
		_, pending := c.oks[id]
		delete(c.oks, id)
		c.mu.Unlock()
		if !pending {
			return nil // the read loop already called cb
		}
	}
	return err
}

// publish sends one event and waits for its OK. When the relay answers
// "auth-required:" and key is known, it authenticates as key and retries
// once.
func (c *conn) publish(ctx context.Context, id string, raw []byte, key func(string) (nostr.SecretKey, bool), pubkey string) (okResult, time.Time, error) {
	for attempt := 0; ; attempt++ {
		ch := make(chan okResult, 1)
		sent := time.Now()
		if err := c.sendEvent(id, raw, func(r okResult) { ch <- r }); err != nil {
			return okResult{}, sent, err
		}
		var r okResult
		select {
		case r = <-ch:
		case <-ctx.Done():
			c.forget(id)
			return okResult{}, sent, ctx.Err()
		}
		if attempt == 0 && c.authRetry(ctx, r, key, pubkey) {
			continue
		}
		return r, sent, nil
	}
}

// authRetry handles a refusal that authentication as the event's author
// may cure: "auth-required:", or "restricted:" from a relay that wants the
// author itself authenticated. If the author's key is known and the
// connection has not authenticated as it yet, it does so (NIP-42 allows
// several identities per connection) and reports that a retry is due.
func (c *conn) authRetry(ctx context.Context, r okResult, key func(string) (nostr.SecretKey, bool), pubkey string) bool {
	if r.OK || key == nil || !(strings.HasPrefix(r.Msg, "auth-required:") || strings.HasPrefix(r.Msg, "restricted:")) {
		return false
	}
	c.mu.Lock()
	done := c.authed[pubkey]
	c.mu.Unlock()
	if done {
		return false
	}
	sk, ok := key(pubkey)
	if !ok {
		return false
	}
	return c.authenticate(ctx, sk) == nil
}

func (c *conn) forget(id string) {
	c.mu.Lock()
	delete(c.oks, id)
	c.mu.Unlock()
}

// authenticate answers the latest challenge as sk and waits for the OK. It
// waits up to 5 s for a challenge if none has arrived yet.
func (c *conn) authenticate(ctx context.Context, sk nostr.SecretKey) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		ch := c.challenge
		c.mu.Unlock()
		if ch != "" {
			return c.sendAuth(ctx, sk, ch)
		}
		if time.Now().After(deadline) {
			return errors.New("no AUTH challenge received")
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return errConnClosed
		}
	}
}

func (c *conn) sendAuth(ctx context.Context, sk nostr.SecretKey, challenge string) error {
	ev := nostr.Event{CreatedAt: time.Now().Unix(), Kind: nostr.KindClientAuth,
		Tags: nostr.Tags{{"relay", c.url}, {"challenge", challenge}}}
	if err := ev.Sign(sk); err != nil {
		return err
	}
	raw := ev.AppendJSON(nil)
	ch := make(chan okResult, 1)
	c.mu.Lock()
	c.oks[ev.ID] = func(r okResult) { ch <- r }
	c.mu.Unlock()
	if err := c.write(func(b []byte) []byte { return nostr.AppendAuth(b, raw) }); err != nil {
		c.forget(ev.ID)
		return err
	}
	select {
	case r := <-ch:
		if !r.OK {
			return fmt.Errorf("AUTH refused: %s", r.Msg)
		}
		c.mu.Lock()
		c.authed[ev.PubKey] = true
		c.mu.Unlock()
		return nil
	case <-time.After(10 * time.Second):
		c.forget(ev.ID)
		return errors.New("AUTH: no OK within 10s")
	case <-ctx.Done():
		c.forget(ev.ID)
		return ctx.Err()
	}
}

// newSubID returns a connection-unique subscription id.
func (c *conn) newSubID(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, c.nextSub.Add(1))
}

// subscribe registers h under subID and sends the REQ (or COUNT if count).
func (c *conn) subscribe(subID string, filters []nostr.Filter, count bool, h *subHandler) error {
	c.mu.Lock()
	if c.readErr != nil {
		c.mu.Unlock()
		return errConnClosed
	}
	c.subs[subID] = h
	c.mu.Unlock()
	return c.write(func(b []byte) []byte {
		if count {
			return nostr.AppendCount(b, subID, filters...)
		}
		return nostr.AppendReq(b, subID, filters...)
	})
}

// unsubscribe forgets subID and, if sendClose, sends CLOSE.
func (c *conn) unsubscribe(subID string, sendClose bool) error {
	c.mu.Lock()
	delete(c.subs, subID)
	c.mu.Unlock()
	if !sendClose {
		return nil
	}
	return c.write(func(b []byte) []byte { return nostr.AppendClose(b, subID) })
}

// reqResult is the outcome of one REQ that ran to EOSE.
type reqResult struct {
	IDs     []string
	Latency time.Duration
	Closed  string // CLOSED message, if the relay refused the REQ
}

// query sends a REQ, collects the stored events until EOSE (or CLOSED) and
// closes the subscription.
func (c *conn) query(ctx context.Context, filters []nostr.Filter) (reqResult, error) {
	subID := c.newSubID("q")
	var res reqResult
	ch := make(chan time.Time, 1)
	var closedMsg string
	finished := false // touched by the read goroutine only
	h := &subHandler{
		event: func(id string, _ time.Time) {
			if !finished {
				res.IDs = append(res.IDs, id)
			}
		},
		eose: func(at time.Time) {
			if !finished {
				finished = true
				ch <- at
			}
		},
		closed: func(msg string, at time.Time) {
			if !finished {
				finished = true
				closedMsg = msg
				ch <- at
			}
		},
	}
	start := time.Now()
	if err := c.subscribe(subID, filters, false, h); err != nil {
		return res, err
	}
	select {
	case at := <-ch:
		res.Latency = at.Sub(start)
	case <-ctx.Done():
		c.unsubscribe(subID, false)
		return reqResult{}, ctx.Err()
	case <-c.done:
		return res, errConnClosed
	}
	// The handlers write nothing once they signalled, so res is ours.
	res.Closed = closedMsg
	if closedMsg != "" {
		c.unsubscribe(subID, false)
		return res, nil
	}
	return res, c.unsubscribe(subID, true)
}

// count sends a NIP-45 COUNT and waits for the answer; closed is the CLOSED
// message if the relay refused it.
func (c *conn) count(ctx context.Context, filters []nostr.Filter) (n int64, lat time.Duration, closed string, err error) {
	subID := c.newSubID("c")
	ch := make(chan time.Time, 1)
	finished := false // touched by the read goroutine only
	var gotN int64
	var gotClosed string
	h := &subHandler{
		count: func(v int64, at time.Time) {
			if !finished {
				finished, gotN = true, v
				ch <- at
			}
		},
		closed: func(msg string, at time.Time) {
			if !finished {
				finished, gotClosed = true, msg
				ch <- at
			}
		},
	}
	start := time.Now()
	if err = c.subscribe(subID, filters, true, h); err != nil {
		return
	}
	defer c.unsubscribe(subID, false)
	select {
	case at := <-ch:
		lat, n, closed = at.Sub(start), gotN, gotClosed
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.done:
		err = errConnClosed
	}
	return
}

// readLoop reads and routes every message until the socket fails.
func (c *conn) readLoop() {
	defer close(c.done)
	var err error
	for {
		var r interface{ Read([]byte) (int, error) }
		_, r, err = c.ws.NextReader()
		if err != nil {
			break
		}
		c.readBuf.Reset()
		if _, err = c.readBuf.ReadFrom(r); err != nil {
			break
		}
		c.route(c.readBuf.Bytes(), time.Now())
	}
	c.mu.Lock()
	c.readErr = err
	oks := c.oks
	c.oks = map[string]func(okResult){}
	subs := c.subs
	c.subs = map[string]*subHandler{}
	c.mu.Unlock()
	for _, cb := range oks {
		cb(okResult{Msg: "closed: connection ended before OK"})
	}
	for _, h := range subs {
		if h.closed != nil {
			h.closed("closed: connection ended", time.Now())
		}
	}
}

var eventPrefix = []byte(`["EVENT","`)

// route dispatches one message. EVENT messages are only scanned for their
// subscription id and event id.
func (c *conn) route(data []byte, at time.Time) {
	if bytes.HasPrefix(data, eventPrefix) {
		rest := data[len(eventPrefix):]
		q := bytes.IndexByte(rest, '"')
		if q < 0 {
			return
		}
		sub := rest[:q]
		id := eventID(rest[q:])
		c.mu.Lock()
		h := c.subs[string(sub)]
		c.mu.Unlock()
		if h != nil && h.event != nil {
			h.event(id, at)
		}
		return
	}
	msg, err := nostr.ParseRelayMessage(data)
	if err != nil {
		c.notices.Add(1)
		return
	}
	switch m := msg.(type) {
	case *nostr.OKMessage:
		c.mu.Lock()
		cb := c.oks[m.EventID]
		delete(c.oks, m.EventID)
		c.mu.Unlock()
		if cb != nil {
			cb(okResult{OK: m.OK, Msg: m.Message, At: at})
		}
	case *nostr.EOSEMessage:
		c.mu.Lock()
		h := c.subs[m.SubID]
		c.mu.Unlock()
		if h != nil && h.eose != nil {
			h.eose(at)
		}
	case *nostr.ClosedMessage:
		c.mu.Lock()
		h := c.subs[m.SubID]
		delete(c.subs, m.SubID)
		c.mu.Unlock()
		if h != nil && h.closed != nil {
			h.closed(m.Message, at)
		}
	case *nostr.CountMessage:
		c.mu.Lock()
		h := c.subs[m.SubID]
		c.mu.Unlock()
		if h != nil && h.count != nil {
			h.count(m.Count, at)
		}
	case *nostr.NoticeMessage:
		c.notices.Add(1)
	case *nostr.AuthChallengeMessage:
		c.mu.Lock()
		c.challenge = m.Challenge
		c.mu.Unlock()
		c.challengeOnce.Do(func() { close(c.challenged) })
	}
}

// eventID returns the value of the first "id" key in an event object's
// JSON. A quote inside a JSON string is always escaped, so the first
// unescaped `"id":"` is the key.
func eventID(obj []byte) string {
	const key = `"id":"`
	i := bytes.Index(obj, []byte(key))
	if i < 0 || len(obj) < i+len(key)+64 {
		return ""
	}
	return string(obj[i+len(key) : i+len(key)+64])
}
