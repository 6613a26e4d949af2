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
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
)

func TestMultihost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	opSK, _ := nostr.GenerateSecretKey()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, ln, t.TempDir(), opSK.PublicKey(), []string{"a.localhost:" + port, "b.localhost:" + port})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	// dial opens a WebSocket to host (served on addr); code is the HTTP
	// status of a refused upgrade.
	dial := func(host string) (*websocket.Conn, int) {
		ws, resp, err := websocket.DefaultDialer.Dial("ws://"+addr, http.Header{"Host": {host}})
		if err != nil {
			if resp == nil {
				t.Fatal(err)
			}
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { _ = ws.Close() })
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _, _ = ws.ReadMessage() // the AUTH challenge
		return ws, http.StatusSwitchingProtocols
	}
	roundTrip := func(ws *websocket.Conn, msg []byte) nostr.RelayMessage {
		if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		m, err := nostr.ParseRelayMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	// An event stored on a is not on b.
	sk, _ := nostr.GenerateSecretKey()
	ev := &nostr.Event{Kind: 1, CreatedAt: time.Now().Unix(), Content: "on a"}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	a, _ := dial("a.localhost:" + port)
	if ok, _ := roundTrip(a, nostr.AppendEventEnvelope(nil, ev.AppendJSON(nil))).(*nostr.OKMessage); ok == nil || !ok.OK {
		t.Fatalf("publish on a: %+v", ok)
	}
	b, _ := dial("b.localhost:" + port)
	if _, eose := roundTrip(b, nostr.AppendReq(nil, "q", nostr.Filter{IDs: []string{ev.ID}})).(*nostr.EOSEMessage); !eose {
		t.Fatal("b sees a's event")
	}

	// c exists once the operator provisioned it.
	c := "c.localhost:" + port
	if _, code := dial(c); code != http.StatusNotFound {
		t.Fatalf("unprovisioned host: %d", code)
	}
	body := []byte(`{"host":"` + c + `"}`)
	sum := sha256.Sum256(body)
	url := "http://" + addr + "/operator/communities"
	auth := &nostr.Event{Kind: nostr.KindHTTPAuth, CreatedAt: time.Now().Unix(),
		Tags: []nostr.Tag{{"u", url}, {"method", "POST"}, {"payload", hex.EncodeToString(sum[:])}}}
	if err := auth.Sign(opSK); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", nip98.Scheme+" "+base64.StdEncoding.EncodeToString(auth.AppendJSON(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("provision: %d", resp.StatusCode)
	}
	if _, code := dial(c); code != http.StatusSwitchingProtocols {
		t.Fatalf("provisioned host: %d", code)
	}
}
