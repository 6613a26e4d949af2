package apitoken_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/httpapi"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/pubsub/redis"
	"github.com/buzzrelay/buzz/store"
)

// dialAs opens a WebSocket to pod's server for community host and
// authenticates as u with token in the AUTH event's auth_token tag.
func dialAs(t *testing.T, pod *relaytest.Relay, host string, u relaytest.User, token string) *websocket.Conn {
	t.Helper()
	h := http.Header{"Host": {host}}
	ws, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(pod.Srv.URL, "http"), h)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Cleanup(func() { ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var challenge []string
	if err := ws.ReadJSON(&challenge); err != nil || len(challenge) != 2 || challenge[0] != "AUTH" {
		t.Fatalf("challenge %q %v", challenge, err)
	}
	ev := gonostr.Event{Kind: 22242, CreatedAt: gonostr.Now(),
		Tags: gonostr.Tags{{"relay", "ws://" + host}, {"challenge", challenge[1]}, {"auth_token", token}}}
	if err := ev.Sign(u.SK); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteJSON([]any{"AUTH", ev}); err != nil {
		t.Fatal(err)
	}
	var ok []any
	if err := ws.ReadJSON(&ok); err != nil || len(ok) != 4 || ok[0] != "OK" || ok[2] != true {
		t.Fatalf("AUTH answered %v %v", ok, err)
	}
	// A REQ answered shows the pod serves the connection (and retains the
	// community's control topic).
	if err := ws.WriteJSON([]any{"REQ", "s", map[string]any{"kinds": []int{1}, "limit": 1}}); err != nil {
		t.Fatal(err)
	}
	for {
		var m []json.RawMessage
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if string(m[0]) == `"EOSE"` {
			return ws
		}
	}
}

// closedWith waits until ws is closed by the relay and returns the close
// frame's text.
func closedWith(t *testing.T, ws *websocket.Conn) string {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Text
			}
			t.Fatalf("connection not closed by the relay: %v", err)
		}
	}
}

// TestRevocationReachesEveryPod: two relays share one store and one Redis
// (each with its own broker, as two buzzd pods). A token revoked on pod a
// is refused over HTTP by pod b at once, and the connections that
// authenticated with it are closed on both pods ("auth-required: token
// revoked"); a connection with another token of the same pubkey stays
// open.
func TestRevocationReachesEveryPod(t *testing.T) {
	url := "redis://" + testenv.NeedRedis(t)
	ns := testenv.RandomName("apitoken-test")
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		ctx := context.Background()
		pod := func() (*relaytest.Relay, *apitoken.Service) {
			b, err := redis.New(ctx, url, redis.WithNamespace(ns), redis.WithLogger(relaytest.Quiet()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			svc, err := apitoken.New(st.(store.TokenStore), apitoken.WithBus(b))
			if err != nil {
				t.Fatal(err)
			}
			v, err := nip98.NewVerifier()
			if err != nil {
				t.Fatal(err)
			}
			return relaytest.ServeWith(t, st, buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithChannels(), buzz.WithHTTPAuth(v), buzz.WithFeature(httpapi.New()),
				buzz.WithBroker(b), buzz.WithControlBus(b), buzz.WithAPITokens(svc), buzz.WithLogger(relaytest.Quiet())), svc
		}
		a, svcA := pod()
		b, _ := pod()
		host := a.Host // pod b serves a's community when asked for its host
		c, err := st.LookupHost(ctx, host)
		if err != nil {
			t.Fatal(err)
		}
		bot := relaytest.NewUser()
		doomed, rec := mint(t, svcA, c, bot.PK, 0, apitoken.MessagesRead)
		kept, _ := mint(t, svcA, c, bot.PK, 0, apitoken.MessagesRead)

		code, _, raw := bearer(t, b, doomed, http.MethodPost, host, "/query", []byte(`{}`))
		relaytest.Eq(t, "pod b before the revocation ("+raw+")", code, http.StatusOK)
		onA := dialAs(t, a, host, bot, doomed)
		onB := dialAs(t, b, host, bot, doomed)
		keptOnB := dialAs(t, b, host, bot, kept)

		if _, changed, err := svcA.Revoke(ctx, c, rec.ID); err != nil || !changed {
			t.Fatalf("revoke on pod a: %v %v", changed, err)
		}
		code, m, _ := bearer(t, b, doomed, http.MethodPost, host, "/query", []byte(`{}`))
		relaytest.Eq(t, "pod b right after the revocation", code, http.StatusUnauthorized)
		relaytest.Eq(t, "its code", m["error"], any("token_revoked"))
		relaytest.Eq(t, "connection on pod a", closedWith(t, onA), "auth-required: token revoked")
		relaytest.Eq(t, "connection on pod b", closedWith(t, onB), "auth-required: token revoked")

		// The other token's connection is still served.
		_ = keptOnB.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := keptOnB.WriteJSON([]any{"REQ", "t", map[string]any{"kinds": []int{1}, "limit": 1}}); err != nil {
			t.Fatal(err)
		}
		for {
			var m []json.RawMessage
			if err := keptOnB.ReadJSON(&m); err != nil {
				t.Fatalf("the other token's connection: %v", err)
			}
			if string(m[0]) == `"EOSE"` {
				break
			}
		}
	})
}
