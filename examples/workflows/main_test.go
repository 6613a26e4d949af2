package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/workflow"
)

// TestShout runs the example and checks, over a WebSocket, that a
// definition using the custom action is accepted and answers a message.
func TestShout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, t.TempDir()) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	ws, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var challenge string // the relay's latest AUTH challenge
	read := func() nostr.RelayMessage {
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		m, err := nostr.ParseRelayMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := m.(*nostr.AuthChallengeMessage); ok {
			challenge = c.Challenge
		}
		return m
	}
	sk, _ := nostr.GenerateSecretKey()
	send := func(ev *nostr.Event, envelope func([]byte, []byte) []byte) *nostr.OKMessage {
		if err := ws.WriteMessage(websocket.TextMessage, envelope(nil, ev.AppendJSON(nil))); err != nil {
			t.Fatal(err)
		}
		for {
			if ok, is := read().(*nostr.OKMessage); is && ok.EventID == ev.ID {
				return ok
			}
		}
	}
	sign := func(ev *nostr.Event) *nostr.Event {
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	// publish sends an event; asked to authenticate (commands and
	// definitions need their author authenticated), it answers the
	// challenge (NIP-42) and sends the event again, as standard clients do.
	publish := func(kind int, content string, tags ...nostr.Tag) *nostr.OKMessage {
		ev := sign(&nostr.Event{Kind: kind, CreatedAt: time.Now().Unix(), Content: content, Tags: tags})
		ok := send(ev, nostr.AppendEventEnvelope)
		if ok.OK || !strings.HasPrefix(ok.Message, "auth-required:") {
			return ok
		}
		auth := sign(&nostr.Event{Kind: nostr.KindClientAuth, CreatedAt: time.Now().Unix(),
			Tags: nostr.Tags{{"challenge", challenge}, {"relay", "ws://" + ln.Addr().String()}}})
		if a := send(auth, nostr.AppendAuth); !a.OK {
			t.Fatalf("AUTH: %s", a.Message)
		}
		return send(ev, nostr.AppendEventEnvelope)
	}
	ch := workflow.NewID().String()
	if ok := publish(9007, "", nostr.Tag{"h", ch}, nostr.Tag{"name", "general"}); !ok.OK {
		t.Fatalf("create channel: %s", ok.Message)
	}
	def := `name: Shout
trigger: {on: message_posted, filter: 'starts_with(trigger_text, "!shout ")'}
steps:
  - id: loud
    action: shout
    text: "{{trigger.text}}"
  - id: reply
    action: send_message
    text: "{{steps.loud.output.text}}"
`
	if ok := publish(nostr.KindDefinition, def, nostr.Tag{"d", workflow.NewID().String()}, nostr.Tag{"h", ch}); !ok.OK {
		t.Fatalf("define: %s", ok.Message)
	}
	bad := strings.Replace(def, "text: \"{{trigger.text}}\"", "txt: x", 1)
	if ok := publish(nostr.KindDefinition, bad, nostr.Tag{"d", workflow.NewID().String()}, nostr.Tag{"h", ch}); ok.OK || !strings.HasPrefix(ok.Message, "invalid: ") {
		t.Fatalf("custom action's validation: %v %q", ok.OK, ok.Message)
	}
	if err := ws.WriteMessage(websocket.TextMessage, nostr.AppendReq(nil, "s", nostr.Filter{Kinds: []int{9},
		Tags: map[string][]string{"h": {ch}}, Limit: 0, LimitSet: true})); err != nil {
		t.Fatal(err)
	}
	publish(9, "!shout hello there", nostr.Tag{"h", ch})
	for {
		if m, ok := read().(*nostr.EventMessage); ok && m.Event.PubKey != sk.PublicKey() {
			if m.Event.Content != "HELLO THERE" {
				t.Fatalf("reply %q", m.Event.Content)
			}
			return
		}
	}
}
