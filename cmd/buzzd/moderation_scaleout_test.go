package main

import (
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
)

// TestScaleOutBan: two buzzd processes on one PostgreSQL and Redis. A ban
// sent to pod A closes the banned pubkey's live subscription on pod B with
// CLOSED "blocked: …" (the control bus, not a cache expiry), pod B refuses
// its EVENTs at once, the ban means nothing in another community, and an
// unban through pod B lets it write through pod A again.
func TestScaleOutBan(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	d := startDeployment(t, 2, freshDatabase(t), "redis://127.0.0.1:6379", nil)
	podA, podB := d.pods[0], d.pods[1]
	owner, bob := mustKey(t), mustKey(t)
	const host = "mod.scaleout.test"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, d.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateCommunity(ctx, store.NewCommunity{Host: host, OwnerPubKey: owner.PublicKey()}); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	podA.waitHost(t, host)
	podB.waitHost(t, host)

	oc := dialAuthed(t, podA, host, owner)
	bc := dialAuthed(t, podB, host, bob)
	if ok := bc.publish(sign(t, bob, 1)); !ok.OK {
		t.Fatalf("bob before the ban: %q", ok.Message)
	}
	if err := bc.ws.WriteMessage(websocket.TextMessage, nostr.AppendReq(nil, "live", nostr.Filter{Kinds: []int{1}, Limit: 1, LimitSet: true})); err != nil {
		t.Fatal(err)
	}
	for {
		if _, ok := bc.next().(*nostr.EOSEMessage); ok {
			break
		}
	}

	banned := time.Now()
	if ok := oc.publish(sign(t, owner, nostr.KindBan, nostr.Tag{"p", bob.PublicKey()}, nostr.Tag{"reason", "spam"})); !ok.OK {
		t.Fatalf("ban through pod A: %q", ok.Message)
	}
	_ = bc.ws.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, raw, err := bc.ws.ReadMessage()
	if err != nil {
		t.Fatalf("no CLOSED on pod B within 3 s of the ban through pod A: %v", err)
	}
	m, err := nostr.ParseRelayMessage(raw)
	if closed, ok := m.(*nostr.ClosedMessage); err != nil || !ok || closed.SubID != "live" || closed.Message != "blocked: you are banned from this community" {
		t.Fatalf("bob's message on pod B after the ban = %s", raw)
	}
	t.Logf("CLOSED on pod B %v after the ban was sent to pod A", time.Since(banned).Round(time.Millisecond))
	if ok := bc.publish(sign(t, bob, 1)); ok.OK || ok.Message != "blocked: you are banned from this community" {
		t.Fatalf("bob's EVENT on pod B after the ban: %v %q", ok.OK, ok.Message)
	}
	// Another community: the ban means nothing there, on either pod.
	if ok := dialAuthed(t, podB, hostBeta, bob).publish(sign(t, bob, 1)); !ok.OK {
		t.Fatalf("bob in another community: %q", ok.Message)
	}

	// Unban through pod B; pod A (which never cached bob) and pod B admit him.
	if ok := dialAuthed(t, podB, host, owner).publish(sign(t, owner, nostr.KindUnban, nostr.Tag{"p", bob.PublicKey()})); !ok.OK {
		t.Fatalf("unban through pod B: %q", ok.Message)
	}
	if ok := dialAuthed(t, podA, host, bob).publish(sign(t, bob, 1)); !ok.OK {
		t.Fatalf("bob on pod A after the unban: %q", ok.Message)
	}
	if ok := bc.publish(sign(t, bob, 1)); !ok.OK {
		t.Fatalf("bob on pod B after the unban: %q", ok.Message)
	}
}
