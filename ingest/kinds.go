package ingest

import (
	"errors"
	"strconv"

	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
)

// validateKind applies the rules particular to some kinds.
//
// Kind 5 (NIP-09 deletion request): it must name at least one target with an
// "e" tag (a 64-hex event id) or an "a" tag (a "kind:pubkey:d" coordinate).
// A malformed target is refused, and so is an "a" coordinate of another
// author — a deletion request can only ever remove its author's own events,
// so naming someone else's is a mistake we report rather than store. An "e"
// target of another author cannot be judged without a lookup; the store
// ignores it (deletion is same-author only).
//
// Kind 30617 (NIP-34 repository announcement): ValidateRepository.
// Kind 30621 (NIP-MP project): ValidateProject.
// Kinds 0, 7, 40003, 40008 and 45002: messaging.Validate (Buzz's messaging rules).
// Both 30617 and 30621 are global-only, as in Buzz: community-wide, never filed in a
// channel. After their own rules (so Buzz's rejection order stands), an
// h tag on them is refused rather than silently dropped.
func validateKind(ev *nostr.Event) error {
	switch ev.Kind {
	case nostr.KindDeletion:
		return validateDeletion(ev)
	case nostr.KindRepository:
		return globalOnly(ev, ValidateRepository(ev))
	case nostr.KindProject:
		return globalOnly(ev, ValidateProject(ev))
	case nostr.KindTyping:
		return validateTyping(ev)
	}
	return messaging.Validate(ev)
}

// globalOnly returns err, or, when the kind's own rules passed, a refusal
// of an h tag: the kind is community-wide.
func globalOnly(ev *nostr.Event, err error) error {
	if err != nil {
		return err
	}
	if ev.Tags.Find("h") != nil {
		return errors.New("invalid: kind " + strconv.Itoa(ev.Kind) + " is community-wide and takes no h tag")
	}
	return nil
}

func validateDeletion(ev *nostr.Event) error {
	targets := 0
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "e":
			if !nostr.IsLowerHex(t[1], 64) {
				return errors.New("invalid: deletion e tag must hold a 64-character lowercase hex event id")
			}
			targets++
		case "a":
			_, pub, _, ok := nostr.ParseCoordinate(t[1])
			if !ok {
				return errors.New("invalid: deletion a tag must be kind:pubkey:d")
			}
			if pub != ev.PubKey {
				return errors.New("invalid: a deletion request can only name the author's own coordinates")
			}
			targets++
		}
	}
	if targets == 0 {
		return errors.New("invalid: deletion request must have at least one e or a tag")
	}
	return nil
}

// MsgTypingNoChannel refuses a typing indicator (kind 20002) that does not
// name exactly one channel: it is never delivered community-wide.
const MsgTypingNoChannel = "invalid: typing indicator requires exactly one h tag"

func validateTyping(ev *nostr.Event) error {
	n := 0
	for _, t := range ev.Tags {
		if len(t) >= 1 && t[0] == "h" {
			n++
			if len(t) < 2 || t[1] == "" {
				return errors.New(MsgTypingNoChannel)
			}
		}
	}
	if n != 1 {
		return errors.New(MsgTypingNoChannel)
	}
	return messaging.Validate(ev)
}
