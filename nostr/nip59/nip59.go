// Package nip59 seals and gift-wraps events as NIP-59 describes.
//
// A rumor is an unsigned event (its id is set, its signature empty). Wrap
// encrypts the rumor to the recipient with NIP-44 under the sender's key
// into a kind 13 seal signed by the sender, then encrypts the seal under a
// fresh random key into a kind 1059 gift wrap signed by that random key and
// p-tagged to the recipient. Both timestamps are moved up to two days into
// the past at random, so they do not reveal when the message was written.
// Only the recipient's key opens the wrap (Unwrap), and the seal's
// signature proves who sent the rumor.
//
// It depends on nostr and nip44 only; it must not import tenant or the
// relay.
package nip59

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/nostr/nip44"
)

// maxTweak is how far into the past seal and wrap timestamps may be moved.
const maxTweak = 2 * 24 * time.Hour

// Verifier checks an event's id and signature; *nostr.Verifier is one.
type Verifier interface {
	Verify(e *nostr.Event) error
}

// Wrap seals rumor from sender and gift-wraps the seal to recipient (64 hex
// x-only public key). The rumor's PubKey is set to the sender's key, its
// ID computed and its Sig cleared; its other fields are the caller's.
func Wrap(rumor nostr.Event, sender nostr.SecretKey, recipient string) (*nostr.Event, error) {
	return wrapAt(rumor, sender, recipient, time.Now(), rand.Reader)
}

func wrapAt(rumor nostr.Event, sender nostr.SecretKey, recipient string, now time.Time, rnd io.Reader) (*nostr.Event, error) {
	senderPub := sender.PublicKey()
	if senderPub == "" {
		return nil, errors.New("nip59: sender key is out of range")
	}
	if !nostr.IsLowerHex(recipient, 64) {
		return nil, errors.New("nip59: recipient must be 64 lowercase hex characters")
	}
	rumor.PubKey = senderPub
	rumor.Sig = ""
	if rumor.Tags == nil {
		rumor.Tags = nostr.Tags{}
	}
	rumor.ID = rumor.ComputeID()
	rumorJSON, err := json.Marshal(toWire(&rumor))
	if err != nil {
		return nil, fmt.Errorf("nip59: rumor: %w", err)
	}
	ck, err := nip44.NewConversationKey(sender, recipient)
	if err != nil {
		return nil, fmt.Errorf("nip59: seal: %w", err)
	}
	sealContent, err := nip44.Encrypt(string(rumorJSON), ck)
	if err != nil {
		return nil, fmt.Errorf("nip59: seal: %w", err)
	}
	sealAt, err := pastTime(now, rnd)
	if err != nil {
		return nil, err
	}
	seal := nostr.Event{CreatedAt: sealAt, Kind: nostr.KindSeal, Tags: nostr.Tags{}, Content: sealContent}
	if err := seal.Sign(sender); err != nil {
		return nil, fmt.Errorf("nip59: seal: %w", err)
	}
	ephemeral, err := nostr.GenerateSecretKey()
	if err != nil {
		return nil, fmt.Errorf("nip59: wrap key: %w", err)
	}
	wck, err := nip44.NewConversationKey(ephemeral, recipient)
	if err != nil {
		return nil, fmt.Errorf("nip59: wrap: %w", err)
	}
	wrapContent, err := nip44.Encrypt(string(seal.AppendJSON(nil)), wck)
	if err != nil {
		return nil, fmt.Errorf("nip59: wrap: %w", err)
	}
	wrapAt, err := pastTime(now, rnd)
	if err != nil {
		return nil, err
	}
	wrap := &nostr.Event{
		CreatedAt: wrapAt,
		Kind:      nostr.KindGiftWrap,
		Tags:      nostr.Tags{{"p", recipient}},
		Content:   wrapContent,
	}
	if err := wrap.Sign(ephemeral); err != nil {
		return nil, fmt.Errorf("nip59: wrap: %w", err)
	}
	return wrap, nil
}

// pastTime is now moved back by a uniformly random duration below maxTweak,
// in whole seconds.
func pastTime(now time.Time, rnd io.Reader) (int64, error) {
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return 0, fmt.Errorf("nip59: timestamp: %w", err)
	}
	back := binary.BigEndian.Uint64(b[:]) % uint64(maxTweak/time.Second)
	return now.Unix() - int64(back), nil
}

// Unwrap opens a kind 1059 gift wrap with the recipient's key and returns
// the rumor inside, with its PubKey the seal's verified signer. It fails
// when the wrap or seal does not decrypt, the seal is not a validly signed
// kind 13, or the rumor's pubkey or (when present) id does not match.
func Unwrap(wrap *nostr.Event, recipient nostr.SecretKey, v Verifier) (*nostr.Event, error) {
	if wrap.Kind != nostr.KindGiftWrap {
		return nil, fmt.Errorf("nip59: kind %d is not a gift wrap", wrap.Kind)
	}
	wck, err := nip44.NewConversationKey(recipient, wrap.PubKey)
	if err != nil {
		return nil, fmt.Errorf("nip59: wrap: %w", err)
	}
	sealJSON, err := nip44.Decrypt(wrap.Content, wck)
	if err != nil {
		return nil, fmt.Errorf("nip59: wrap: %w", err)
	}
	seal, err := nostr.ParseEvent([]byte(sealJSON))
	if err != nil {
		return nil, fmt.Errorf("nip59: seal: %w", err)
	}
	if seal.Kind != nostr.KindSeal {
		return nil, fmt.Errorf("nip59: seal has kind %d", seal.Kind)
	}
	if err := v.Verify(seal); err != nil {
		return nil, fmt.Errorf("nip59: seal signature: %w", err)
	}
	ck, err := nip44.NewConversationKey(recipient, seal.PubKey)
	if err != nil {
		return nil, fmt.Errorf("nip59: seal: %w", err)
	}
	rumorJSON, err := nip44.Decrypt(seal.Content, ck)
	if err != nil {
		return nil, fmt.Errorf("nip59: seal: %w", err)
	}
	var w wireRumor
	if err := json.Unmarshal([]byte(rumorJSON), &w); err != nil {
		return nil, fmt.Errorf("nip59: rumor: %w", err)
	}
	rumor := &nostr.Event{ID: w.ID, PubKey: w.PubKey, CreatedAt: w.CreatedAt, Kind: w.Kind, Tags: w.Tags, Content: w.Content}
	if rumor.Tags == nil {
		rumor.Tags = nostr.Tags{}
	}
	if rumor.PubKey != seal.PubKey {
		return nil, errors.New("nip59: rumor pubkey differs from the seal's signer")
	}
	// Some clients leave the rumor's id out; it is then computed here. A
	// present id must be the right one.
	if rumor.ID == "" {
		rumor.ID = rumor.ComputeID()
	} else if !rumor.CheckID() {
		return nil, errors.New("nip59: rumor id does not match its content")
	}
	return rumor, nil
}

// wireRumor is a rumor on the wire: an event without "sig".
type wireRumor struct {
	ID        string     `json:"id"`
	PubKey    string     `json:"pubkey"`
	CreatedAt int64      `json:"created_at"`
	Kind      int        `json:"kind"`
	Tags      nostr.Tags `json:"tags"`
	Content   string     `json:"content"`
}

func toWire(e *nostr.Event) wireRumor {
	return wireRumor{ID: e.ID, PubKey: e.PubKey, CreatedAt: e.CreatedAt, Kind: e.Kind, Tags: e.Tags, Content: e.Content}
}
