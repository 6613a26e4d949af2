package buzz

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip17"
	"github.com/buzzrelay/buzz/nostr/nip59"
	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/store"
)

// dm wraps a NIP-17 message from sender to recipient: a kind 1059 signed
// by a fresh throwaway key.
func dm(t *testing.T, sender *signer, recipient, text string) *nostr.Event {
	t.Helper()
	wrap, err := nip17.Message(sender.SK, recipient, text)
	if err != nil {
		t.Fatal(err)
	}
	if wrap.PubKey == sender.Pub() {
		t.Fatal("the wrap is signed by the sender, not a throwaway key")
	}
	return wrap
}

// TestGiftWrapAuthRequired: on a relay that requires authentication, a
// gift wrap signed by a throwaway key is accepted from a connection
// authenticated as anyone, refused (auth-required) before AUTH, and read
// only by its recipient.
func TestGiftWrapAuthRequired(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		tr := backendRelay(t, st, WithAuth(AuthRequired))
		alice, bob, carol := newSigner(t), newSigner(t), newSigner(t)
		wrap := dm(t, alice, bob.Pub(), "hello bob")

		anon := tr.dial(t)
		anon.SendEvent(wrap)
		sawChallenge := false
		for {
			m := anon.Next()
			if _, ok := m.(*nostr.AuthChallengeMessage); ok {
				sawChallenge = true
				continue
			}
			ok, isOK := m.(*nostr.OKMessage)
			if !isOK {
				t.Fatalf("got %#v, want OK", m)
			}
			eq(t, "unauthenticated gift wrap accepted", ok.OK, false)
			mustPrefix(t, "unauthenticated gift wrap", ok.Message, "auth-required:")
			break
		}
		eq(t, "AUTH challenge sent with the refusal", sawChallenge, true)

		a := tr.dial(t)
		a.AuthAs(alice, tr.host)
		if ok := a.PublishOnce(wrap); !ok.OK {
			t.Fatalf("alice's gift wrap refused: %q", ok.Message)
		}
		// A throwaway signer does not make other kinds publishable.
		eq(t, "a note signed by another key", a.PublishOnce(carol.Event(1, now(), "not mine")).Message, ingest.MsgNotAuthor)

		// A gift wrap names exactly one recipient.
		throwaway := newSigner(t)
		for name, tags := range map[string][]nostr.Tag{
			"no p":        nil,
			"two p":       {{"p", bob.Pub()}, {"p", carol.Pub()}},
			"malformed p": {{"p", "bob"}},
		} {
			bad := throwaway.Event(nostr.KindGiftWrap, now(), "sealed", tags...)
			eq(t, name, a.PublishOnce(bad).Message, ingest.MsgGiftWrapRecipient)
		}

		wraps := nostr.Filter{Kinds: []int{nostr.KindGiftWrap}}
		b := tr.dial(t)
		b.AuthAs(bob, tr.host)
		got := b.Req("b", wraps)
		if len(got) != 1 || got[0].ID != wrap.ID {
			t.Fatalf("bob reads %v, want his gift wrap %s", ids(got), wrap.ID)
		}
		v, err := nostr.NewVerifier()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		rumor, err := nip59.Unwrap(got[0], bob.SK, v)
		if err != nil || rumor.Content != "hello bob" || rumor.PubKey != alice.Pub() {
			t.Fatalf("unwrap = %+v, %v", rumor, err)
		}

		c := tr.dial(t)
		c.AuthAs(carol, tr.host)
		if got := ids(c.Req("c", wraps, nostr.Filter{IDs: []string{wrap.ID}})); slices.Contains(got, wrap.ID) {
			t.Fatal("carol read bob's gift wrap")
		}
	})
}

// TestGiftWrapMembersOnly: in a members-only community the authenticated
// sender of a gift wrap must be an unbanned member, and so must its
// recipient.
func TestGiftWrapMembersOnly(t *testing.T) {
	eachBackend(t, func(t *testing.T, m *modRelay) {
		const host = "private.example"
		owner, member, banned, outsider := newSigner(t), newSigner(t), newSigner(t), newSigner(t)
		id := m.owned(t, host, owner)
		if err := m.store.SetCommunityAccess(context.Background(), id, channel.AccessMembers); err != nil {
			t.Fatal(err)
		}
		oc := m.authed(t, host, owner)
		for _, s := range []*signer{member, banned} {
			eq(t, "owner adds a member", oc.Publish(m.cmd(owner, nostr.KindAddCommunityMember, nostr.Tag{"p", s.Pub()})).OK, true)
		}
		// Banned after authenticating (a banned key cannot AUTH).
		bc := m.authed(t, host, banned)
		eq(t, "owner bans a member", oc.Publish(m.cmd(owner, nostr.KindBan, nostr.Tag{"p", banned.Pub()})).OK, true)

		mustPrefix(t, "unauthenticated sender", m.dial(t, host).PublishOnce(dm(t, member, owner.Pub(), "x")).Message, "auth-required:")
		eq(t, "non-member sender", m.authed(t, host, outsider).PublishOnce(dm(t, outsider, member.Pub(), "x")).Message, channel.MsgMembersOnly)
		eq(t, "banned sender", bc.PublishOnce(dm(t, banned, member.Pub(), "x")).Message, "blocked: you are banned from this community")

		mc := m.authed(t, host, member)
		eq(t, "member to a non-member", mc.PublishOnce(dm(t, member, outsider.Pub(), "x")).Message, ingest.MsgGiftWrapNonRecipient)
		wrap := dm(t, member, owner.Pub(), "hello owner")
		if ok := mc.PublishOnce(wrap); !ok.OK {
			t.Fatalf("member to the owner refused: %q", ok.Message)
		}
		got := oc.Req("o", nostr.Filter{Kinds: []int{nostr.KindGiftWrap}})
		if len(got) != 1 || got[0].ID != wrap.ID {
			t.Fatalf("owner reads %v, want %s", ids(got), wrap.ID)
		}
	})
}

// TestGiftWrapRateLimitedByAuthenticatedKey: the rate limit of a gift
// wrap is charged to the connection's authenticated key, so fresh
// throwaway signers do not escape it.
func TestGiftWrapRateLimitedByAuthenticatedKey(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		l, err := ratelimit.NewMemory(ratelimit.Tiers{ratelimit.TierHuman: {ratelimit.ClassEvent: {Limit: 3, Window: time.Hour}}})
		if err != nil {
			t.Fatal(err)
		}
		tr := backendRelay(t, st, WithAuth(AuthRequired), WithRateLimiter(l))
		alice, bob := newSigner(t), newSigner(t)
		a := tr.dial(t)
		a.AuthAs(alice, tr.host)
		for i := range 3 {
			if ok := a.PublishOnce(dm(t, alice, bob.Pub(), "within quota")); !ok.OK {
				t.Fatalf("wrap %d refused: %q", i, ok.Message)
			}
		}
		over := dm(t, alice, bob.Pub(), "over quota")
		mustPrefix(t, "a fourth wrap, from a fresh throwaway key", a.PublishOnce(over).Message, "rate-limited: ")
		b := tr.dial(t)
		b.AuthAs(bob, tr.host)
		if got := b.Req("b", nostr.Filter{IDs: []string{over.ID}}); len(got) != 0 {
			t.Fatal("a wrap refused over quota was stored")
		}
		if ok := b.PublishOnce(dm(t, bob, alice.Pub(), "bob's own quota")); !ok.OK {
			t.Fatalf("bob's wrap refused: %q", ok.Message)
		}
	})
}
