package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/admin"
	"github.com/buzzrelay/buzz/nostr"
)

// wsConn is a minimal Nostr client on one community host.
type wsConn struct {
	t  *testing.T
	ws *websocket.Conn
}

func dial(t *testing.T, srvURL, host string) *wsConn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srvURL, "http"), http.Header{"Host": {host}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return &wsConn{t, ws}
}

func (c *wsConn) send(v ...any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

// next reads one relay message (AUTH challenges skipped).
func (c *wsConn) next() []json.RawMessage {
	c.t.Helper()
	for {
		_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var msg []json.RawMessage
		if err := c.ws.ReadJSON(&msg); err != nil {
			c.t.Fatal(err)
		}
		if len(msg) > 0 && string(msg[0]) == `"AUTH"` {
			continue
		}
		return msg
	}
}

func (c *wsConn) publish(ev *nostr.Event) {
	c.t.Helper()
	c.send("EVENT", json.RawMessage(ev.AppendJSON(nil)))
	msg := c.next()
	if len(msg) < 3 || string(msg[0]) != `"OK"` || string(msg[2]) != "true" {
		c.t.Fatalf("publish kind %d: %s", ev.Kind, msg)
	}
}

// TestAdminFeedback: a client's product feedback (kind 42000) is accepted,
// no member of the community reads it back (REQ by kind or id, COUNT, live
// delivery), and the operator reads it on the admin host.
func TestAdminFeedback(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st backend) {
		ctx := context.Background()
		op, author, member := newKey(t), newKey(t), newKey(t)
		if _, _, err := st.EnsureCommunity(ctx, "a.example"); err != nil {
			t.Fatal(err)
		}
		h, err := admin.New(admin.WithHost(adminHost), admin.WithOperators(op.PublicKey()), admin.WithStore(st))
		if err != nil {
			t.Fatal(err)
		}
		srv := serve(t, st, h)

		reader := dial(t, srv.URL, "a.example")
		reader.send("REQ", "live", map[string]any{"kinds": []int{nostr.KindProductFeedback, 1}})
		if msg := reader.next(); string(msg[0]) != `"EOSE"` {
			t.Fatalf("live subscription: %s", msg)
		}

		fb := &nostr.Event{Kind: nostr.KindProductFeedback, CreatedAt: time.Now().Unix(),
			Tags: nostr.Tags{{"client", "buzz-web"}}, Content: "the sidebar is too narrow"}
		if err := fb.Sign(author); err != nil {
			t.Fatal(err)
		}
		note := &nostr.Event{Kind: 1, CreatedAt: time.Now().Unix(), Content: "after the feedback"}
		if err := note.Sign(author); err != nil {
			t.Fatal(err)
		}
		writer := dial(t, srv.URL, "a.example")
		writer.publish(fb)
		writer.publish(note)

		// Live: the note published after the feedback arrives; the feedback never.
		for {
			msg := reader.next()
			if string(msg[0]) != `"EVENT"` {
				t.Fatalf("live: %s", msg)
			}
			var ev nostr.Event
			if err := json.Unmarshal(msg[2], &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Kind == nostr.KindProductFeedback {
				t.Fatalf("product feedback delivered live: %s", msg[2])
			}
			if ev.ID == note.ID {
				break
			}
		}

		// Stored reads by another member.
		other := dial(t, srv.URL, "a.example")
		for i, f := range []map[string]any{
			{"kinds": []int{nostr.KindProductFeedback}},
			{"ids": []string{fb.ID}},
			{"authors": []string{author.PublicKey()}},
		} {
			other.send("REQ", "q", f)
			for {
				msg := other.next()
				if string(msg[0]) == `"EOSE"` {
					break
				}
				if string(msg[0]) == `"EVENT"` && strings.Contains(string(msg[2]), fb.ID) {
					t.Fatalf("filter %d returned the feedback: %s", i, msg)
				}
			}
			other.send("CLOSE", "q")
		}
		other.send("COUNT", "c", map[string]any{"kinds": []int{nostr.KindProductFeedback}})
		if msg := other.next(); string(msg[0]) != `"COUNT"` || !strings.Contains(string(msg[2]), `"count":0`) {
			t.Fatalf("COUNT: %s", msg)
		}

		// The operator reads it on the admin host; nobody else does.
		url := "https://" + adminHost + admin.FeedbackPath + "?limit=10"
		status, body := do(t, srv, http.MethodGet, adminHost, admin.FeedbackPath+"?limit=10",
			map[string]string{"Authorization": token(t, op, url, "GET"), "Origin": "https://" + adminHost})
		if status != http.StatusOK {
			t.Fatalf("feedback: %d %s", status, body)
		}
		var got struct {
			Feedback []admin.FeedbackJSON `json:"feedback"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Feedback) != 1 {
			t.Fatalf("feedback = %s (%v)", body, err)
		}
		f := got.Feedback[0]
		if f.ID != fb.ID || f.Host != "a.example" || f.PubKey != author.PublicKey() || f.Content != fb.Content ||
			f.CreatedAt != fb.CreatedAt || f.ReceivedAt == "" || f.CommunityID == "" {
			t.Fatalf("feedback = %+v", f)
		}
		var tags [][]string
		if err := json.Unmarshal(f.Tags, &tags); err != nil || len(tags) != 1 || tags[0][0] != "client" || tags[0][1] != "buzz-web" {
			t.Fatalf("tags = %s (%v)", f.Tags, err)
		}
		for _, tc := range []struct {
			name string
			hdr  map[string]string
			want int
		}{
			{"no token", nil, http.StatusUnauthorized},
			{"not an operator", map[string]string{"Authorization": token(t, member, url, "GET")}, http.StatusForbidden},
			{"foreign Origin", map[string]string{"Authorization": token(t, op, url, "GET"), "Origin": "https://evil.example"}, http.StatusForbidden},
		} {
			if status, body := do(t, srv, http.MethodGet, adminHost, admin.FeedbackPath+"?limit=10", tc.hdr); status != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.want)
			}
		}
		if status, body := do(t, srv, http.MethodGet, "a.example", admin.FeedbackPath, map[string]string{"Authorization": token(t, op, url, "GET")}); status != http.StatusNotFound {
			t.Errorf("feedback on a community host: %d %s", status, body)
		}
	})
}
