package main

import (
	"context"
	"net"
	"net/http"
	"slices"
	"testing"

	gonostr "github.com/nbd-wtf/go-nostr"
)

func TestFrontend(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, t.TempDir()) }()
	addr := ln.Addr().String()
	c := client{t: t, base: "http://" + addr}
	alice := newUser(t)

	// Publish, read the timeline, then follow it: the stored note, eose,
	// and a note published while following.
	first := alice.event(t, 1, "hello, frontend")
	c.mustPost(addr, first, nil)
	notes := gonostr.Filter{Kinds: []int{1}}
	if a, got := c.timeline(addr, notes, nil); a.Status != http.StatusOK || !slices.Equal(ids(got), []string{first.ID}) {
		t.Fatalf("timeline: %d %s", a.Status, a.Body)
	}
	s, a := c.stream(addr, notes, &alice)
	if s == nil {
		t.Fatalf("stream: %d %s", a.Status, a.Body)
	}
	if got := s.stored(); !slices.Equal(ids(got), []string{first.ID}) {
		t.Fatalf("stored: %v", ids(got))
	}
	second := alice.event(t, 1, "live")
	if a, r := c.post(addr, second, &alice); !r.Accepted {
		t.Fatalf("signed POST: %d %s", a.Status, a.Body)
	}
	if got := s.nextEvent(); got.ID != second.ID {
		t.Fatalf("live: %s, want %s", got.ID, second.ID)
	}
	// A repeat gets the relay's OK message.
	if _, r := c.post(addr, second, nil); r.Message != "duplicate: already have this event" {
		t.Fatalf("duplicate: %+v", r)
	}
	// Any other host is unknown.
	if _, a := c.do(http.MethodGet, "elsewhere.example", "/timeline", nil, nil); a.Status != http.StatusNotFound {
		t.Fatalf("unknown host: %d %s", a.Status, a.Body)
	}

	// Shutdown ends the open stream and returns.
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
