package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net"
	"net/http"
	"testing"

	"github.com/buzzrelay/buzz/examples/internal/wstest"
	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/gorilla/websocket"
)

// TestTwoProcesses runs two processes of the example over one database and
// one Redis namespace: an event published on one reaches a subscriber on
// the other, live; archiving the community through one process's operator
// API closes its connections on the other, which then refuses it.
func TestTwoProcesses(t *testing.T) {
	opSK, _ := nostr.GenerateSecretKey()
	cfg := config{
		operator:    opSK.PublicKey(),
		databaseURL: pgtest.NewDatabase(t),
		redisURL:    "redis://" + testenv.NeedRedis(t),
		namespace:   testenv.RandomName("example-cluster"),
		community:   "relay.example",
	}
	start := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, ln, cfg) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
		return ln.Addr().String()
	}
	a, b := start(), start()

	ca, cb := wstest.Dial(t, "ws://"+a, nil), wstest.Dial(t, "ws://"+b, nil)
	if _, r := ca.Req("live", nostr.Filter{Kinds: []int{1}}); r != "" {
		t.Fatalf("REQ on a: %q", r)
	}
	sk, _ := nostr.GenerateSecretKey()
	ev := wstest.Event(t, sk, 1, "from process b")
	if ok := cb.Publish(ev); !ok.OK {
		t.Fatalf("publish on b: %q", ok.Message)
	}
	for {
		if m, ok := ca.Next().(*nostr.EventMessage); ok && m.SubID == "live" {
			if m.Event.ID != ev.ID {
				t.Fatalf("a delivered %s, want %s", m.Event.ID, ev.ID)
			}
			break
		}
	}

	// Archive through a: b's connection is closed, and b refuses new ones.
	body := []byte(`{"host":"` + cfg.community + `","owner_pubkey":""}`)
	sum := sha256.Sum256(body)
	url := "http://" + a + "/operator/communities/archive"
	auth := wstest.Event(t, opSK, nostr.KindHTTPAuth, "",
		nostr.Tag{"u", url}, nostr.Tag{"method", "POST"}, nostr.Tag{"payload", hex.EncodeToString(sum[:])})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", nip98.Scheme+" "+base64.StdEncoding.EncodeToString(auth.AppendJSON(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("archive: %d", resp.StatusCode)
	}
	cb.CloseCode()
	ca.CloseCode()
	for _, p := range []string{a, b} {
		if _, resp, err := websocket.DefaultDialer.Dial("ws://"+p, nil); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s serves the archived community: %v", p, err)
		}
	}
}
