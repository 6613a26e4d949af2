package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/buzzrelay/buzz/examples/internal/wstest"
	"github.com/buzzrelay/buzz/nostr"
)

// start runs the example on a free port with dataDir until the test ends.
func start(t *testing.T, dataDir, addr string) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, dataDir) }()
	var once bool
	stop := func() {
		if once {
			return
		}
		once = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// self is the signer the relay advertises in NIP-11 for addr's community.
func self(t *testing.T, addr string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct{ Self string }
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.Self == "" {
		t.Fatalf("NIP-11: %v %+v", err, doc)
	}
	return doc.Self
}

func TestMinimal(t *testing.T) {
	dir := t.TempDir()
	addr, stop := start(t, dir, "127.0.0.1:0")
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz: %d", resp.StatusCode)
	}
	c := wstest.Dial(t, "ws://"+addr, nil)
	sk, _ := nostr.GenerateSecretKey()
	ev := wstest.Event(t, sk, 1, "hello, minimal")
	if ok := c.Publish(ev); !ok.OK {
		t.Fatalf("publish: %q", ok.Message)
	}
	got, reason := c.Req("q", nostr.Filter{IDs: []string{ev.ID}})
	if reason != "" || len(got) != 1 || got[0].Content != ev.Content {
		t.Fatalf("query: %q %v", reason, got)
	}
	signer := self(t, addr)
	stop() // graceful: returns once the relay and the server have stopped

	// The relay key lives in the data directory: the same signer after a
	// restart.
	// restart on the same address: the same host, so the same community.
	addr2, _ := start(t, dir, addr)
	if got := self(t, addr2); got != signer {
		t.Fatalf("signer changed across restart: %s, then %s", signer, got)
	}
}
