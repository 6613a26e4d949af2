package buzz

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// batchConn is the network connection under a WebSocket. Between gather and
// flush, the bytes gorilla writes (frames it has built, each under its own
// write lock) are appended to one buffer, and flush sends them with a
// single write: a connection's writer that finds several messages queued
// pays one syscall for all of them instead of one per frame. Outside
// gather/flush, writes go straight through.
//
// Order is kept: every write, and every change of the write deadline, is
// serialized by mu, the buffered bytes included, exactly as gorilla's own
// write lock serializes frames. interrupt is the one unserialized call: it
// shortens the deadline of a flush blocked on a peer that does not read.
type batchConn struct {
	net.Conn
	mu        sync.Mutex
	gathering bool
	buf       []byte
}

// maxGather is how many bytes are gathered before they are written out
// even though the batch is not finished.
const maxGather = 64 << 10

// gatherPool recycles flush buffers, so an idle connection holds none.
var gatherPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.gathering {
		return b.Conn.Write(p)
	}
	if b.buf == nil {
		b.buf = (*gatherPool.Get().(*[]byte))[:0]
	}
	if len(b.buf)+len(p) > maxGather && len(b.buf) > 0 {
		if err := b.writeBufLocked(); err != nil {
			return 0, err
		}
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// SetWriteDeadline is serialized with the writes, so it never changes the
// deadline of a flush in progress.
func (b *batchConn) SetWriteDeadline(t time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Conn.SetWriteDeadline(t)
}

// SetDeadline: see SetWriteDeadline.
func (b *batchConn) SetDeadline(t time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Conn.SetDeadline(t)
}

// gather starts buffering writes.
func (b *batchConn) gather() {
	b.mu.Lock()
	b.gathering = true
	b.mu.Unlock()
}

// flush stops buffering and writes what was gathered, with deadline.
func (b *batchConn) flush(deadline time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gathering = false
	if len(b.buf) == 0 {
		b.putBuf()
		return nil
	}
	if err := b.Conn.SetWriteDeadline(deadline); err != nil {
		b.putBuf()
		return err
	}
	return b.writeBufLocked()
}

func (b *batchConn) writeBufLocked() error {
	_, err := b.Conn.Write(b.buf)
	b.buf = b.buf[:0]
	if err != nil || !b.gathering {
		b.putBuf()
	}
	return err
}

func (b *batchConn) putBuf() {
	if b.buf == nil {
		return
	}
	if cap(b.buf) <= maxGather+(16<<10) {
		buf := b.buf[:0]
		gatherPool.Put(&buf)
	}
	b.buf = nil
}

// interrupt makes a write blocked on the peer fail by deadline t, without
// waiting for it.
func (b *batchConn) interrupt(t time.Time) {
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
