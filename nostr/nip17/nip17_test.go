package nip17

import (
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip59"
)

func TestMessage(t *testing.T) {
	sender, _ := nostr.GenerateSecretKey()
	recipient, _ := nostr.GenerateSecretKey()
	v, err := nostr.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	wrap, err := Message(sender, recipient.PublicKey(), "deploy finished", nostr.Tag{"subject", "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if wrap.Kind != nostr.KindGiftWrap || wrap.Tags.Find("p").Value() != recipient.PublicKey() {
		t.Fatalf("wrap kind %d tags %v", wrap.Kind, wrap.Tags)
	}
	rumor, err := nip59.Unwrap(wrap, recipient, v)
	if err != nil {
		t.Fatal(err)
	}
	if rumor.Kind != nostr.KindPrivateMessage || rumor.Content != "deploy finished" || rumor.PubKey != sender.PublicKey() {
		t.Fatalf("rumor %+v", rumor)
	}
	if rumor.Tags.Find("p").Value() != recipient.PublicKey() || rumor.Tags.Find("subject").Value() != "ci" {
		t.Fatalf("rumor tags %v", rumor.Tags)
	}
	if _, err := Message(sender, recipient.PublicKey(), ""); err == nil {
		t.Fatal("empty message accepted")
	}
	if _, err := Message(sender, "not-a-key", "x"); err == nil {
		t.Fatal("bad recipient accepted")
	}
}
