// Package nip17 builds NIP-17 private direct messages: a kind 14 chat
// rumor, sealed and gift-wrapped to its recipient with package nip59.
//
// It depends on nostr and nip59 only; it must not import tenant or the
// relay.
package nip17

import (
	"errors"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip59"
)

// Message returns the kind 1059 gift wrap carrying a kind 14 message with
// text from sender to recipient (64 hex x-only public key), p-tagged to the
// recipient; extra tags (e.g. a subject) are appended to the rumor's.
// Only the recipient can open it.
func Message(sender nostr.SecretKey, recipient, text string, extra ...nostr.Tag) (*nostr.Event, error) {
	if text == "" {
		return nil, errors.New("nip17: empty message")
	}
	tags := nostr.Tags{{"p", recipient}}
	tags = append(tags, extra...)
	rumor := nostr.Event{CreatedAt: time.Now().Unix(), Kind: nostr.KindPrivateMessage, Tags: tags, Content: text}
	return nip59.Wrap(rumor, sender, recipient)
}
