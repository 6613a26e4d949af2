package buzz

import (
	"context"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
)

// connectAs connects to url as the user of go-nostr secret key sk ("" for
// a new one) and authenticates it (NIP-42). With ownerSK set, the AUTH
// carries an owner attestation (NIP-OA) signed by ownerSK under
// conditions; claimedOwner, when set, replaces the owner the tag names
// (its signature then does not verify).
func (r *nip29Relay) connectAs(t *testing.T, url, sk, ownerSK, conditions, claimedOwner string) *nip29User {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rl := gonostr.NewRelay(context.Background(), url)
	if err := rl.Connect(ctx); err != nil {
		t.Fatalf("connect: %v", err)
	}
	if sk == "" {
		sk = gonostr.GeneratePrivateKey()
	}
	pk, _ := gonostr.GetPublicKey(sk)
	u := &nip29User{t: t, sk: sk, pk: pk, rl: rl}
	var extra gonostr.Tags
	if ownerSK != "" {
		owner, err := nostr.ParseSecretKey(ownerSK)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := messaging.AttestAgent(owner, pk, conditions)
		if err != nil {
			t.Fatal(err)
		}
		if claimedOwner != "" {
			tag[1] = claimedOwner
		}
		extra = append(extra, gonostr.Tag(tag))
	}
	// A round trip first orders go-nostr's store of the challenge before
	// Auth reads it (see connect).
	if _, err := rl.QuerySync(ctx, gonostr.Filter{Kinds: []int{0}, Limit: 1}); err != nil {
		t.Fatalf("round trip before AUTH: %v", err)
	}
	if err := rl.Auth(ctx, func(e *gonostr.Event) error {
		e.Tags = append(e.Tags, extra...)
		return e.Sign(sk)
	}); err != nil {
		t.Fatalf("AUTH: %v", err)
	}
	return u
}

// TestAgentOwnerEdits: the owner of an agent (attested by an auth tag in
// the agent's AUTH, NIP-OA) may edit (40003) the agent's messages, as Buzz
// allows; nobody else may, nor a claimed owner whose signature does not
// verify, nor the owner of an expired attestation. The first owner recorded
// stays, and the relationship holds in the community it was proved in only.
func TestAgentOwnerEdits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		r := startNIP29Relay(t, b)
		alice, mallory := r.connect(t, r.url, true), r.connect(t, r.url, true)
		gid := storetest.NewChannelID().String()
		h := gonostr.Tag{"h", gid}
		alice.must("create", nostr.KindCreateChannel, gid, gonostr.Tag{"name", "bots"})

		bot := r.connectAs(t, r.url, "", alice.sk, "", "")
		msg := bot.sent("bot message", messaging.KindMessage, "draft", h)
		mallory.refusedWith("a stranger edits the bot's message", messaging.MsgEditNotAuthor, messaging.KindEdit, "hijacked", h, gonostr.Tag{"e", msg})
		alice.sent("the owner edits the bot's message", messaging.KindEdit, "final", h, gonostr.Tag{"e", msg})
		bot.seq = alice.seq + 1 // its edit is the newer one
		bot.sent("the bot edits its own", messaging.KindEdit, "final!", h, gonostr.Tag{"e", msg})
		// The owner's own messages stay the owner's.
		mine := alice.sent("alice's message", messaging.KindMessage, "mine", h)
		bot.refusedWith("the bot edits its owner's message", messaging.MsgEditNotAuthor, messaging.KindEdit, "x", h, gonostr.Tag{"e", mine})

		// The first owner recorded stays: the bot attested by mallory later
		// gives mallory nothing.
		again := r.connectAs(t, r.url, bot.sk, mallory.sk, "", "")
		again.sent("bot message on its second connection", messaging.KindMessage, "two", h)
		mallory.refusedWith("a later owner", messaging.MsgEditNotAuthor, messaging.KindEdit, "x", h, gonostr.Tag{"e", msg})

		// A claimed owner whose signature does not verify, and an expired
		// attestation, record nothing.
		forged := r.connectAs(t, r.url, "", mallory.sk, "", alice.pk)
		fmsg := forged.sent("forged bot's message", messaging.KindMessage, "x", h)
		alice.refusedWith("owner by a forged attestation", messaging.MsgEditNotAuthor, messaging.KindEdit, "x", h, gonostr.Tag{"e", fmsg})
		old := r.connectAs(t, r.url, "", alice.sk, "created_at<1000", "")
		omsg := old.sent("expired bot's message", messaging.KindMessage, "x", h)
		alice.refusedWith("owner by an expired attestation", messaging.MsgEditNotAuthor, messaging.KindEdit, "x", h, gonostr.Tag{"e", omsg})

		// The current text counts the owner's edits.
		edits := alice.query(gonostr.Filter{Kinds: []int{messaging.KindEdit}, Tags: gonostr.TagMap{"e": {msg}}, Authors: []string{bot.pk, alice.pk}})
		if len(edits) != 2 {
			t.Fatalf("%d edits read back, want 2", len(edits))
		}
		conv := make([]*nostr.Event, len(edits))
		for i := range edits {
			conv[i] = toEvent(edits[i])
		}
		eq(t, "current text", messaging.CurrentText(&nostr.Event{ID: msg, PubKey: bot.pk, Content: "draft"}, conv, alice.pk), "final!")

		// Another community: the bot proved nothing there.
		ob := r.connectAs(t, r.otherURL, bot.sk, "", "", "")
		ogid := storetest.NewChannelID().String()
		oh := gonostr.Tag{"h", ogid}
		other := r.connectAs(t, r.otherURL, alice.sk, "", "", "")
		other.must("create", nostr.KindCreateChannel, ogid, gonostr.Tag{"name", "bots"})
		omsg2 := ob.sent("bot message in the other community", messaging.KindMessage, "x", oh)
		other.refusedWith("the owner in another community", messaging.MsgEditNotAuthor, messaging.KindEdit, "x", oh, gonostr.Tag{"e", omsg2})
	})
}
