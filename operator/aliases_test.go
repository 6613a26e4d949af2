package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/tenant"
)

// publisherFunc adapts a func to operator.ControlPublisher.
type publisherFunc func(ctx context.Context, c tenant.CommunityID, m control.Message) error

func (f publisherFunc) PublishControl(ctx context.Context, c tenant.CommunityID, m control.Message) error {
	return f(ctx, c, m)
}

// authOver dials host, authenticates as sk with relay tag relayURL and
// returns the OK message's accepted flag and text.
func (e *env) authOver(host, relayURL string, sk nostr.SecretKey) (bool, string) {
	e.t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.srv.URL, "http"), http.Header{"Host": {host}})
	if err != nil {
		e.t.Fatalf("dial %s: %v", host, err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var challenge []string
	if err := ws.ReadJSON(&challenge); err != nil || len(challenge) != 2 || challenge[0] != "AUTH" {
		e.t.Fatalf("challenge: %v %v", challenge, err)
	}
	ev := &nostr.Event{Kind: nostr.KindClientAuth, CreatedAt: time.Now().Unix(),
		Tags: nostr.Tags{{"challenge", challenge[1]}, {"relay", relayURL}}}
	if err := ev.Sign(sk); err != nil {
		e.t.Fatal(err)
	}
	if err := ws.WriteMessage(websocket.TextMessage, nostr.AppendAuth(nil, ev.AppendJSON(nil))); err != nil {
		e.t.Fatal(err)
	}
	var ok []json.RawMessage
	if err := ws.ReadJSON(&ok); err != nil || len(ok) != 4 {
		e.t.Fatalf("OK: %v %v", ok, err)
	}
	var accepted bool
	var msg string
	_ = json.Unmarshal(ok[2], &accepted)
	_ = json.Unmarshal(ok[3], &msg)
	return accepted, msg
}

func TestOperatorAliases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(t *testing.T) backend) {
		var e *env
		e = newEnv(t, open(t), operator.WithControlPublisher(publisherFunc(func(ctx context.Context, c tenant.CommunityID, m control.Message) error {
			return e.relay.PublishControl(ctx, c, m)
		})))
		status, body := e.api(e.op, http.MethodPost, "/operator/communities", map[string]any{"host": "c.example"})
		expect(t, status, body, http.StatusCreated, "")
		id := body["community_id"].(string)

		status, body = e.api(e.op, http.MethodPost, "/operator/communities/aliases", map[string]any{"community_id": id, "alias": "Alias.Example.:443"})
		expect(t, status, body, http.StatusCreated, "")
		if body["alias"] != "alias.example" || body["community_id"] != id || body["status"] != "added" {
			t.Fatalf("added %v", body)
		}
		for _, tc := range []struct {
			body       map[string]any
			status     int
			code, name string
		}{
			{map[string]any{"community_id": id, "alias": "alias.example"}, http.StatusConflict, "community_exists", "alias twice"},
			{map[string]any{"community_id": id, "alias": "relay.example"}, http.StatusConflict, "community_exists", "another community's host"},
			{map[string]any{"community_id": "6f0c1c1e-5b5e-4d5e-9c1e-1c1e1c1e1c1e", "alias": "x.example"}, http.StatusNotFound, "community_not_found", "unknown community"},
			{map[string]any{"community_id": id, "alias": "https://x.example/"}, http.StatusBadRequest, "invalid_host", "not a bare host"},
			{map[string]any{"community_id": "nope", "alias": "x.example"}, http.StatusBadRequest, "invalid_community_id", "bad id"},
		} {
			status, body := e.api(e.op, http.MethodPost, "/operator/communities/aliases", tc.body)
			t.Run(tc.name, func(t *testing.T) { expect(t, status, body, tc.status, tc.code) })
		}
		status, body = e.api(e.stranger, http.MethodPost, "/operator/communities/aliases", map[string]any{"community_id": id, "alias": "y.example"})
		expect(t, status, body, http.StatusForbidden, "not_operator")

		// The alias serves the community, bound to the alias host.
		user := key(t)
		if ok, msg := e.authOver("alias.example", "ws://alias.example", user); !ok {
			t.Fatalf("AUTH on the alias: %s", msg)
		}
		if ok, _ := e.authOver("alias.example", "ws://c.example", user); ok {
			t.Fatal("AUTH naming the primary host accepted on the alias connection")
		}
		if ok, _ := e.authOver("c.example", "ws://alias.example", user); ok {
			t.Fatal("AUTH naming the alias accepted on the primary host")
		}

		bound, code := e.dial("alias.example")
		if code != http.StatusSwitchingProtocols {
			t.Fatalf("dial the alias: %d", code)
		}
		primary, _ := e.dial("c.example")
		status, body = e.api(e.op, http.MethodPost, "/operator/communities/aliases/remove", map[string]any{"alias": "alias.example"})
		expect(t, status, body, http.StatusOK, "")
		// A connection bound through the removed alias is closed; one
		// through the community's own host is not.
		if got := closeCode(t, bound); got != websocket.ClosePolicyViolation {
			t.Fatalf("connection through the removed alias closed with %d, want 1008", got)
		}
		_ = primary.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, _, err := primary.ReadMessage(); !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("connection through the primary host: %v", err)
		}
		if body["community_id"] != id || body["status"] != "removed" {
			t.Fatalf("removed %v", body)
		}
		if _, code := e.dial("alias.example"); code != http.StatusNotFound {
			t.Fatalf("dial a removed alias: %d, want 404", code)
		}
		status, body = e.api(e.op, http.MethodPost, "/operator/communities/aliases/remove", map[string]any{"alias": "alias.example"})
		expect(t, status, body, http.StatusNotFound, "community_not_found")
		status, body = e.api(e.op, http.MethodPost, "/operator/communities/aliases/remove", map[string]any{"alias": "c.example"})
		expect(t, status, body, http.StatusNotFound, "community_not_found")
	})
}

// staleDirectory maps hosts as another process's host cache might while a
// lookup that started before an archive is still in flight.
type staleDirectory map[string]tenant.CommunityID

func (d staleDirectory) LookupHost(_ context.Context, host string) (tenant.CommunityID, error) {
	if id, ok := d[host]; ok {
		return id, nil
	}
	return tenant.CommunityID{}, tenant.ErrUnmappedHost
}

// TestAliasChangeKeepsArchiveFence: adding or removing an alias of an
// archived community does not lift another process's archive fence (an
// alias change says nothing about the archived state); unarchiving does.
func TestAliasChangeKeepsArchiveFence(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(t *testing.T) backend) {
		stale := staleDirectory{}
		fence, err := control.NewArchiveFence(stale, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var e *env
		e = newEnv(t, open(t), operator.WithControlPublisher(publisherFunc(func(ctx context.Context, c tenant.CommunityID, m control.Message) error {
			fence.OnControl(c, m) // what the other process receives
			return e.relay.PublishControl(ctx, c, m)
		})))
		status, body := e.api(e.op, http.MethodPost, "/operator/communities", map[string]any{"host": "c.example"})
		expect(t, status, body, http.StatusCreated, "")
		id := body["community_id"].(string)
		c, err := e.st.CommunityByHost(context.Background(), "c.example")
		if err != nil {
			t.Fatal(err)
		}
		stale["c.example"] = c.ID
		fenced := func() bool {
			t.Helper()
			_, err := fence.LookupHost(context.Background(), "c.example")
			if err != nil && !errors.Is(err, tenant.ErrUnmappedHost) {
				t.Fatal(err)
			}
			return err != nil
		}
		if fenced() {
			t.Fatal("an active community is fenced")
		}

		status, body = e.api(e.op, http.MethodPost, "/operator/communities/archive", map[string]any{"host": "c.example", "owner_pubkey": ""})
		expect(t, status, body, http.StatusOK, "")
		if !fenced() {
			t.Fatal("the archived community is not fenced")
		}
		status, body = e.api(e.op, http.MethodPost, "/operator/communities/aliases", map[string]any{"community_id": id, "alias": "alias.example"})
		expect(t, status, body, http.StatusCreated, "")
		if !fenced() {
			t.Fatal("adding an alias lifted the archive fence")
		}
		status, body = e.api(e.op, http.MethodPost, "/operator/communities/aliases/remove", map[string]any{"alias": "alias.example"})
		expect(t, status, body, http.StatusOK, "")
		if !fenced() {
			t.Fatal("removing an alias lifted the archive fence")
		}
		status, body = e.api(e.op, http.MethodPost, "/operator/communities/unarchive", map[string]any{"host": "c.example", "owner_pubkey": ""})
		expect(t, status, body, http.StatusOK, "")
		if fenced() {
			t.Fatal("unarchiving did not lift the archive fence")
		}
	})
}
