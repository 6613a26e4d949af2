package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/relaykey"
)

// testRelayKey is the relay master key of the tests' frontends.
var testRelayKey = func() nostr.SecretKey {
	sk, err := nostr.ParseSecretKey(strings.Repeat("07", 32))
	if err != nil {
		panic(err)
	}
	return sk
}()

// TestChannelState: channel commands publish the relay-signed NIP-29 state
// (39000 metadata, 39002 members), stored and live, each community's
// signed with its own key derived from the relay key — the key the relay
// signs that community's state with.
func TestChannelState(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			const A, B = "a.example", "b.example"
			ca, cb := community(t, st, A), community(t, st, B)
			c := serve(t, st, st, trace.NewRecorder())
			alice, bob := newUser(t), newUser(t)
			live, _ := c.stream(A, gonostr.Filter{Kinds: []int{nostr.KindChannelMembers}}, nil)
			live.stored()

			id := createChannel(c, A, alice, "news", channel.VisibilityOpen)
			c.mustPost(A, alice.event(t, nostr.KindPutUser, "", h(id), []string{"p", bob.pk}), &alice)
			idB := createChannel(c, B, alice, "news", channel.VisibilityOpen)

			state := func(host string, id channel.ID, kind int) gonostr.Event {
				t.Helper()
				a, got := c.timeline(host, gonostr.Filter{Kinds: []int{kind}, Tags: gonostr.TagMap{"d": {id.String()}}}, nil)
				if a.Status != http.StatusOK || len(got) == 0 {
					t.Fatalf("kind %d of %s on %s: %d %s", kind, id, host, a.Status, a.Body)
				}
				ev := got[0] // the newest
				if ok, err := ev.CheckSignature(); !ok || err != nil {
					t.Fatalf("kind %d: signature does not verify: %v", kind, err)
				}
				return ev
			}
			signerA := relaykey.Derive(testRelayKey, ca).PublicKey()
			signerB := relaykey.Derive(testRelayKey, cb).PublicKey()
			if signerA == signerB || signerA == testRelayKey.PublicKey() {
				t.Fatal("communities share a signing key, or sign with the master key")
			}
			if ev := state(A, id, nostr.KindChannelMetadata); ev.PubKey != signerA || ev.Tags.GetFirst([]string{"name", "news"}) == nil {
				t.Fatalf("A's 39000: %+v", ev)
			}
			members := state(A, id, nostr.KindChannelMembers)
			if members.PubKey != signerA {
				t.Fatalf("A's 39002 signed by %s, want %s", members.PubKey, signerA)
			}
			var listed []string
			for _, tag := range members.Tags {
				if len(tag) >= 2 && tag[0] == "p" {
					listed = append(listed, tag[1])
				}
			}
			if !slices.Contains(listed, alice.pk) || !slices.Contains(listed, bob.pk) {
				t.Fatalf("A's 39002 lists %v, want alice and bob", listed)
			}
			if ev := state(B, idB, nostr.KindChannelMetadata); ev.PubKey != signerB {
				t.Fatalf("B's 39000 signed by %s, want %s", ev.PubKey, signerB)
			}
			// Live: A's stream sees A's member lists, the last with bob.
			for {
				ev := live.nextEvent()
				if ev.PubKey != signerA {
					t.Fatalf("A's stream got a 39002 signed by %s", ev.PubKey)
				}
				if ev.ID == members.ID {
					break
				}
			}
		})
	}
}
