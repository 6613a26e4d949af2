package buzz

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// batchConn is the network connection under a WebSocket. The connection's
// writer sends its data messages through writeFrames, which frames every
// queued message itself (server frames are unmasked, so a frame is a 2-, 4-
// or 10-byte header and the payload) and writes them together: one syscall
// for all the messages a writer finds queued, no per-message buffer or
// deadline update. gorilla writes only control frames (ping, close) and,
// when the upgrade did not go through hijackCapture, data frames too.
//
// Order is kept: every write, and every change of the write deadline, is
// serialized by mu, so a control frame gorilla writes never lands inside a
// batch. interrupt and stopData are the unserialized calls, for a
// connection closing at once: they never wait for a write blocked on a peer
// that does not read.
type batchConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time // the write deadline last set on Conn; guarded by mu

	closing     atomic.Bool  // a close frame is being or was sent: no more data frames
	interruptAt atomic.Int64 // UnixNano of the deadline set by interrupt, 0 if none
}

// frame is one queued text message: msg, or, for an event sent to a
// subscription, prefix (nostr.AppendEventMessagePrefix: `["EVENT",<sub
// id>,`), event and "]". An event's JSON (read only, shared by every
// connection and subscription it goes to, and by the store's cache) is so
// written from where it is rather than copied into a message of its own.
type frame struct {
	msg    []byte
	prefix []byte
	event  []byte
}

// eventFrame is the frame of event for the subscription whose EVENT
// messages start with prefix.
func eventFrame(prefix, event []byte) frame { return frame{prefix: prefix, event: event} }

// size is the length of the frame's payload.
func (f frame) size() int {
	if f.prefix == nil {
		return len(f.msg)
	}
	return len(f.prefix) + len(f.event) + 1
}

// appendPayload appends the frame's payload to b.
func (f frame) appendPayload(b []byte) []byte {
	if f.prefix == nil {
		return append(b, f.msg...)
	}
	b = append(b, f.prefix...)
	b = append(b, f.event...)
	return append(b, ']')
}

// buffers returns the frame's payload as the pieces it is kept in.
func (f frame) buffers() net.Buffers {
	if f.prefix == nil {
		return net.Buffers{f.msg}
	}
	return net.Buffers{f.prefix, f.event, []byte("]")}
}

// messageWriter is the part of a gorilla connection writeTo needs.
type messageWriter interface {
	NextWriter(messageType int) (io.WriteCloser, error)
}

// writeTo sends the frame as one text message through ws (gorilla's own
// framing, for a connection without a batchConn).
func (f frame) writeTo(ws messageWriter) error {
	w, err := ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	for _, p := range f.buffers() {
		if _, err := w.Write(p); err != nil {
			_ = w.Close()
			return err
		}
	}
	return w.Close()
}

// maxGather is how many bytes are gathered before they are written out
// even though the batch is not finished.
const maxGather = 64 << 10

// gatherPool recycles batch buffers, so an idle connection holds none.
var gatherPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// errCloseSent reports a data message refused after the close frame.
var errCloseSent = errors.New("buzz: close frame already sent")

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Conn.Write(p)
}

// SetWriteDeadline is serialized with the writes, so it never changes the
// deadline of a batch being written. After interrupt, no deadline is later
// than the interrupt's.
func (b *batchConn) SetWriteDeadline(t time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t = b.capDeadline(t)
	b.deadline = t
	return b.Conn.SetWriteDeadline(t)
}

// SetDeadline: see SetWriteDeadline (the read deadline is set as given).
func (b *batchConn) SetDeadline(t time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	t = b.capDeadline(t)
	b.deadline = t
	return b.Conn.SetWriteDeadline(t)
}

// capDeadline returns t, or the interrupt's deadline if there was one and
// t is later (or none).
func (b *batchConn) capDeadline(t time.Time) time.Time {
	if at := b.interruptAt.Load(); at != 0 {
		if it := time.Unix(0, at); t.IsZero() || t.After(it) {
			return it
		}
	}
	return t
}

// writeFrames sends msgs as WebSocket text frames, in order, with as few
// writes as their size allows (one unless they exceed maxGather). Each
// write must make progress within timeout: the write deadline is moved to
// now+timeout unless it already lies within timeout/8 before that (moving
// it costs a runtime timer update, which a writer sending many small
// batches would otherwise pay for each one), so a peer that stops reading
// fails the write after at least 7/8 of timeout and at most timeout.
func (b *batchConn) writeFrames(msgs []frame, timeout time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing.Load() {
		return errCloseSent
	}
	want := time.Now().Add(timeout)
	if at := b.interruptAt.Load(); at != 0 {
		// Interrupted: no write gets more time than interrupt gave.
		if t := time.Unix(0, at); !b.deadline.Equal(t) {
			if err := b.Conn.SetWriteDeadline(t); err != nil {
				return err
			}
			b.deadline = t
		}
	} else if b.deadline.IsZero() || b.deadline.After(want) || want.Sub(b.deadline) > timeout/8 {
		if err := b.Conn.SetWriteDeadline(want); err != nil {
			return err
		}
		b.deadline = want
	}
	bp := gatherPool.Get().(*[]byte)
	buf := (*bp)[:0]
	var err error
	for _, m := range msgs {
		size := m.size()
		if len(buf) > 0 && len(buf)+maxFrameHeader+size > maxGather {
			if _, err = b.Conn.Write(buf); err != nil {
				break
			}
			buf = buf[:0]
		}
		if size > maxGather {
			// A large message goes out from where it is, after its header.
			buf = appendTextFrameHeader(buf, size)
			bufs := append(net.Buffers{buf}, m.buffers()...)
			if _, err = bufs.WriteTo(b.Conn); err != nil {
				break
			}
			buf = buf[:0]
			continue
		}
		buf = appendTextFrameHeader(buf, size)
		buf = m.appendPayload(buf)
	}
	if err == nil && len(buf) > 0 {
		_, err = b.Conn.Write(buf)
	}
	if cap(buf) <= maxGather+(16<<10) {
		*bp = buf[:0]
		gatherPool.Put(bp)
	}
	return err
}

// maxFrameHeader is the largest header of an unmasked frame.
const maxFrameHeader = 10

// appendTextFrameHeader appends the header of one unmasked, final text
// frame of n payload bytes (RFC 6455 section 5.2).
func appendTextFrameHeader(buf []byte, n int) []byte {
	const finText = 0x80 | 0x1
	switch {
	case n < 126:
		return append(buf, finText, byte(n))
	case n < 1<<16:
		return binary.BigEndian.AppendUint16(append(buf, finText, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(buf, finText, 127), uint64(n))
	}
}

// stopData refuses every batch that starts from now on, without waiting for
// one being written (which the close frame then follows, serialized by mu).
func (b *batchConn) stopData() {
	b.closing.Store(true)
}

// interrupt makes a write blocked on the peer fail by deadline t, without
// waiting for it, and keeps every later batch to that deadline.
func (b *batchConn) interrupt(t time.Time) {
	b.interruptAt.Store(t.UnixNano())
	_ = b.Conn.SetWriteDeadline(t)
}

// hijackCapture lets the WebSocket upgrader hijack the connection through a
// batchConn.
type hijackCapture struct {
	http.ResponseWriter
	conn *batchConn
}

func (h *hijackCapture) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &batchConn{Conn: nc}
	return h.conn, brw, nil
}
