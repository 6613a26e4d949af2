package buzz

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestWriteFramesReadByGorilla sends batches through batchConn.writeFrames
// and reads them with gorilla's client: every header length form (7-bit,
// 16-bit, 64-bit), a batch larger than maxGather and a message larger than
// maxGather arrive whole and in order, event frames (prefix, event, "]")
// among them, and a ping gorilla writes between batches does not split a
// frame.
func TestWriteFramesReadByGorilla(t *testing.T) {
	msg := func(n int, c byte) frame { return frame{msg: bytes.Repeat([]byte{c}, n)} }
	event := func(n int, c byte) frame {
		return eventFrame([]byte(`["EVENT","s",`), bytes.Repeat([]byte{c}, n))
	}
	batches := [][]frame{
		{msg(0, 'a')},
		{msg(1, 'b'), msg(125, 'c'), event(110, 'x'), msg(126, 'd'), msg(65535, 'e'), event(65535-14, 'y'), msg(65536, 'f')},
		{msg(maxGather+1, 'g')},
		{msg(40<<10, 'h'), event(40<<10, 'w'), msg(3, 'j'), event(maxGather*2, 'v'), msg(maxGather*3, 'k'), msg(7, 'l')},
	}
	payload := func(f frame) []byte {
		if f.prefix == nil {
			return f.msg
		}
		return append(append(append([]byte(nil), f.prefix...), f.event...), ']')
	}
	pings := 0
	c, done := wireServer(t, func(ws *websocket.Conn, bc *batchConn) error {
		for _, b := range batches {
			if err := bc.writeFrames(b, 5*time.Second); err != nil {
				return err
			}
			if err := ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
				return err
			}
		}
		bc.stopData()
		if err := bc.writeFrames([]frame{msg(1, 'z')}, time.Second); err != errCloseSent {
			t.Errorf("writeFrames after stopData: %v, want errCloseSent", err)
		}
		return nil
	})
	c.SetPingHandler(func(string) error { pings++; return nil })
	for bi, b := range batches {
		for mi, f := range b {
			want := payload(f)
			mt, got, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("batch %d message %d: %v", bi, mi, err)
			}
			if mt != websocket.TextMessage || !bytes.Equal(got, want) {
				t.Fatalf("batch %d message %d: type %d, %d bytes, want text of %d bytes", bi, mi, mt, len(got), len(want))
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pings != len(batches)-1 && pings != len(batches) {
		t.Errorf("%d pings handled, want at least %d", pings, len(batches)-1)
	}
}

func TestAppendTextFrameHeader(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x81, 0}},
		{125, []byte{0x81, 125}},
		{126, []byte{0x81, 126, 0, 126}},
		{65535, []byte{0x81, 126, 0xff, 0xff}},
		{65536, []byte{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	} {
		if got := appendTextFrameHeader(nil, tc.n); !bytes.Equal(got, tc.want) {
			t.Errorf("header(%d) = %x, want %x", tc.n, got, tc.want)
		}
	}
}

// TestFrameWriteToGorilla: without a batchConn, a frame goes out through
// gorilla's own framing (frame.writeTo), an event frame as one message of
// its prefix, event and "]".
func TestFrameWriteToGorilla(t *testing.T) {
	frames := []frame{
		{msg: []byte(`["EOSE","s"]`)},
		eventFrame([]byte(`["EVENT","s",`), []byte(`{"id":"x"}`)),
		eventFrame([]byte(`["EVENT","t",`), bytes.Repeat([]byte{'z'}, maxGather+5)),
	}
	want := []string{`["EOSE","s"]`, `["EVENT","s",{"id":"x"}]`, `["EVENT","t",` + strings.Repeat("z", maxGather+5) + `]`}
	c, done := wireServer(t, func(ws *websocket.Conn, _ *batchConn) error {
		for _, f := range frames {
			if err := f.writeTo(ws); err != nil {
				return err
			}
		}
		return nil
	})
	for i, w := range want {
		mt, got, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if mt != websocket.TextMessage || string(got) != w {
			t.Fatalf("message %d: type %d, %.40q…, want text %.40q…", i, mt, got, w)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// wireServer serves one WebSocket, upgraded through hijackCapture as the
// relay upgrades, with serve, and returns a gorilla client of it (its
// reads time out after 10 s) and the channel serve's result arrives on.
// Both end with the test.
func wireServer(t *testing.T, serve func(ws *websocket.Conn, bc *batchConn) error) (*websocket.Conn, <-chan error) {
	t.Helper()
	up := websocket.Upgrader{}
	done := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hc := &hijackCapture{ResponseWriter: w}
		ws, err := up.Upgrade(hc, r, nil)
		if err != nil {
			done <- err
			return
		}
		defer ws.Close()
		done <- serve(ws, hc.conn)
	}))
	t.Cleanup(srv.Close)
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c, done
}
