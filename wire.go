package buzz

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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
func (b *batchConn) writeFrames(msgs [][]byte, timeout time.Duration) error {
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
		if len(buf) > 0 && len(buf)+maxFrameHeader+len(m) > maxGather {
			if _, err = b.Conn.Write(buf); err != nil {
				break
			}
			buf = buf[:0]
		}
		if len(m) > maxGather {
			// A large message goes out from where it is, after its header.
			buf = appendTextFrameHeader(buf, len(m))
			bufs := net.Buffers{buf, m}
			if _, err = bufs.WriteTo(b.Conn); err != nil {
				break
			}
			buf = buf[:0]
			continue
		}
		buf = appendTextFrameHeader(buf, len(m))
		buf = append(buf, m...)
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
