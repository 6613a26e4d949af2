package nip77

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
)

func itemN(i int) Item {
	h := sha256.Sum256([]byte(fmt.Sprint(i)))
	return Item{CreatedAt: int64(1_700_000_000 + i/3), ID: hex.EncodeToString(h[:])}
}

// pipe is a Transport whose peer is a Server answering in process.
type pipe struct {
	srv     *Server
	replies [][]byte
	closed  bool
}

func (p *pipe) Send(_ context.Context, msg []byte) error {
	m, err := ParseClientMessage(msg, nostr.FilterLimits{})
	if err != nil {
		return err
	}
	switch m := m.(type) {
	case *Open:
		out, err := p.srv.Reconcile(m.Message)
		if err != nil {
			p.replies = append(p.replies, AppendErr(nil, m.SubID, err.Error()))
			return nil
		}
		p.replies = append(p.replies, []byte(`["NOTICE","noise"]`), AppendMsg(nil, m.SubID, out))
	case *Msg:
		out, err := p.srv.Reconcile(m.Message)
		if err != nil {
			return err
		}
		p.replies = append(p.replies, AppendMsg(nil, m.SubID, out))
	case *Close:
		p.closed = true
	}
	return nil
}

func (p *pipe) Recv(context.Context) ([]byte, error) {
	if len(p.replies) == 0 {
		return nil, errors.New("no reply")
	}
	m := p.replies[0]
	p.replies = p.replies[1:]
	return m, nil
}

func TestReconcileFindsBothSides(t *testing.T) {
	for _, n := range []int{0, 1, 50, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var local, remote []Item
			var wantHave, wantNeed []string
			for i := range n {
				it := itemN(i)
				switch {
				case i%50 == 1:
					local = append(local, it)
					wantHave = append(wantHave, it.ID)
				case i%50 == 2:
					remote = append(remote, it)
					wantNeed = append(wantNeed, it.ID)
				default:
					local, remote = append(local, it), append(remote, it)
				}
			}
			srv, err := NewServer(remote, MinFrameBytes)
			if err != nil {
				t.Fatal(err)
			}
			p := &pipe{srv: srv}
			res, err := Reconcile(context.Background(), p, "s1", []byte(`{}`), local, MinFrameBytes, nil)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(wantHave)
			slices.Sort(wantNeed)
			if !slices.Equal(res.Have, wantHave) || !slices.Equal(res.Need, wantNeed) {
				t.Fatalf("have %d need %d, want %d and %d", len(res.Have), len(res.Need), len(wantHave), len(wantNeed))
			}
			if !p.closed {
				t.Fatal("no NEG-CLOSE at the end")
			}
			if res.Stats.RoundTrips < 1 || res.Stats.BytesSent == 0 || res.Stats.BytesReceived == 0 {
				t.Fatalf("stats %+v", res.Stats)
			}
		})
	}
}

func TestParseClientMessage(t *testing.T) {
	lim := nostr.FilterLimits{MaxValues: 2, MaxBytes: 1000}
	good := []struct {
		in   string
		want any
	}{
		{`["NEG-CLOSE","a"]`, &Close{SubID: "a"}},
		{` [ "NEG-MSG" , "a", "61" ]`, &Msg{SubID: "a", Message: "61"}},
		{`["NEG-OPEN","a",{"kinds":[1]},"6100"]`, nil},
	}
	for _, g := range good {
		if !IsClientMessage([]byte(g.in)) {
			t.Errorf("%s: not recognised", g.in)
		}
		m, err := ParseClientMessage([]byte(g.in), lim)
		if err != nil {
			t.Errorf("%s: %v", g.in, err)
			continue
		}
		if o, ok := m.(*Open); ok {
			if o.SubID != "a" || o.Message != "6100" || !slices.Equal(o.Filter.Kinds, []int{1}) {
				t.Errorf("%s: %+v", g.in, o)
			}
			continue
		}
		if fmt.Sprint(m) != fmt.Sprint(g.want) {
			t.Errorf("%s: %+v", g.in, m)
		}
	}
	bad := []struct{ in, sub, text string }{
		{`["NEG-CLOSE"]`, "", "subscription id"},
		{`["NEG-CLOSE",""]`, "", "subscription id"},
		{`["NEG-CLOSE","a","b"]`, "a", "elements"},
		{`["NEG-MSG","a","6"]`, "a", "even length"},
		{`["NEG-MSG","a","zz"]`, "a", "hex"},
		{`["NEG-MSG","a",61]`, "a", "hex"},
		{`["NEG-OPEN","a",[{}],"61"]`, "a", "one filter"},
		{`["NEG-OPEN","a",{"kinds":[1,2,3]},"61"]`, "a", "too many values"},
		{`["NEG-OPEN","a",{}]`, "a", "elements"},
		{`["NEG-OPEN","a",{"kinds":"x"},"61"]`, "a", "invalid"},
		{`["NEG-OPEN",`, "", "array"},
	}
	for _, b := range bad {
		_, err := ParseClientMessage([]byte(b.in), lim)
		if err == nil || !strings.HasPrefix(err.Error(), "invalid: ") || !strings.Contains(err.Error(), b.text) {
			t.Errorf("%s: %v, want invalid: …%s", b.in, err, b.text)
			continue
		}
		var pe *ParseError
		if got := errors.As(err, &pe); got != (b.sub != "") || got && pe.SubID != b.sub {
			t.Errorf("%s: sub id %v", b.in, err)
		}
	}
	for _, s := range []string{`["REQ","a",{}]`, `["NEG-ERR","a","x"]`, `{}`, ``, `["NEG-OPENER"]`} {
		if IsClientMessage([]byte(s)) {
			t.Errorf("%s recognised as a client NEG message", s)
		}
	}
}

// A hostile message stating more ids than it holds is refused before the
// library reads it (it would allocate for the count).
func TestServerRefusesOversizedCounts(t *testing.T) {
	srv, err := NewServer([]Item{itemN(1)}, MinFrameBytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{
		"61" + "00" + "00" + "02" + "ffffffff0f", // id list of 2^35 ids
		"61" + "00" + "21",                       // bound id longer than 32 bytes
		"61" + "00" + "00" + "01" + "00",         // fingerprint cut short
		"61" + "00" + "00" + "07",                // unknown mode
		"61" + "ffffffffffffffffffff",            // endless varint
	} {
		if _, err := srv.Reconcile(msg); err == nil || !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Errorf("%s: %v", msg, err)
		}
	}
	// Another version is answered with this one.
	if out, err := srv.Reconcile("62"); err != nil || out != "61" {
		t.Errorf("version 2: %q %v", out, err)
	}
}

func FuzzParseClientMessage(f *testing.F) {
	for _, s := range []string{`["NEG-OPEN","a",{"kinds":[1]},"6100"]`, `["NEG-MSG","a","61"]`, `["NEG-CLOSE","a"]`, `["NEG-OPEN","a",{"#e":["x"]},"61"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseClientMessage(data, nostr.FilterLimits{MaxValues: 10, MaxBytes: 1000})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("error %q lacks the invalid: prefix", err)
			}
			return
		}
		if !IsClientMessage(data) {
			t.Fatalf("parsed %T but IsClientMessage is false", m)
		}
	})
}

func FuzzServerReconcile(f *testing.F) {
	items := make([]Item, 100)
	for i := range items {
		items[i] = itemN(i)
	}
	c, err := NewClient(items[:60], MinFrameBytes)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(c.Start())
	c.Close()
	f.Add("61")
	f.Add("6100000200")
	f.Fuzz(func(t *testing.T, msg string) {
		srv, err := NewServer(items, MinFrameBytes)
		if err != nil {
			t.Fatal(err)
		}
		out, err := srv.Reconcile(msg)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("error %q lacks the invalid: prefix", err)
			}
			return
		}
		if len(out) > 2*MinFrameBytes+2*200 {
			t.Fatalf("reply of %d hex digits exceeds the frame limit", len(out))
		}
	})
}
