package channel

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/buzzrelay/buzz/nostr"
)

// ID is a channel's storage key. It is only meaningful together with
// the community it is looked up in.
//
// A channel is named, in h and d tags, by its NIP-29 group id: a string of
// the characters a-z0-9-_ (see ValidGroupID). Buzz's own clients use
// canonical UUIDs, whose ID is the UUID itself; any other group id
// maps to a name-based UUID (version 8: SHA-256 of a domain label and the
// id, truncated). The channel row records the group id it was created
// with (Channel.GroupID), and admission compares it with the h tag, so a
// UUID chosen to equal another group id's key names nothing.
type ID [16]byte

// MaxGroupIDLen bounds a NIP-29 group id.
const MaxGroupIDLen = 128

// ValidGroupID reports whether s is a NIP-29 group id: 1 to MaxGroupIDLen
// characters of a-z0-9-_.
func ValidGroupID(s string) bool {
	if s == "" || len(s) > MaxGroupIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// groupKeyLabel domain-separates the name-based channel keys.
const groupKeyLabel = "buzz/nip29-group-id/v1\x00"

// ParseID returns the storage key of group id s: the UUID itself for
// the canonical lowercase 8-4-4-4-12 UUID text, the name-based key for any
// other valid NIP-29 group id. It refuses anything else (upper case,
// spaces, braces, the empty string), so one channel has one spelling and
// an h tag filter matches exactly the events of the channel.
func ParseID(s string) (ID, bool) {
	if id, ok := parseUUID(s); ok {
		return id, true
	}
	if !ValidGroupID(s) {
		return ID{}, false
	}
	h := sha256.Sum256([]byte(groupKeyLabel + s))
	var id ID
	copy(id[:], h[:16])
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // RFC 9562 variant
	return id, true
}

// IsUUIDGroupID reports whether group id s is a canonical UUID (the ids
// Buzz's own clients choose).
func IsUUIDGroupID(s string) bool {
	_, ok := parseUUID(s)
	return ok
}

func parseUUID(s string) (ID, bool) {
	var id ID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, false
	}
	ok := nostr.DecodeLowerHex(id[0:4], s[0:8]) && nostr.DecodeLowerHex(id[4:6], s[9:13]) &&
		nostr.DecodeLowerHex(id[6:8], s[14:18]) && nostr.DecodeLowerHex(id[8:10], s[19:23]) &&
		nostr.DecodeLowerHex(id[10:16], s[24:36])
	if !ok {
		return ID{}, false
	}
	return id, true
}

// String returns the key's canonical UUID text (the group id of a channel
// whose group id is a UUID; see Channel.GroupID for the others).
func (id ID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], id[10:])
	return string(b[:])
}

// IsZero reports whether id is the zero value (never a channel).
func (id ID) IsZero() bool { return id == ID{} }

// ErrInvalidTag: an event's "h" tags do not name exactly one group
// (a tag without value, a value that is not a NIP-29 group id, or two
// different values).
var ErrInvalidTag = errors.New("channel: h tag must name exactly one group id (a-z0-9-_)")

// GroupIDOf returns the value of an event's first "h" tag ("" when
// none). Use it after OfEvent accepted the event.
func GroupIDOf(ev *nostr.Event) string {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "h" {
			return t[1]
		}
	}
	return ""
}

// OfEvent returns the channel an event names with its "h" tag. An
// event without "h" tag has none (ok false). Repeated "h" tags must all hold
// the same value. A membership notification (44100, 44101) names its
// channel but is none of its events: it is community-wide, read by the
// user it names (p-gated), a removed user included. A DM visibility
// snapshot (30622) names conversations with its h tags and is
// community-wide too, read by its viewer alone.
func OfEvent(ev *nostr.Event) (id ID, ok bool, err error) {
	if ev.Kind == nostr.KindMemberAdded || ev.Kind == nostr.KindMemberRemoved || ev.Kind == nostr.KindDMVisibility {
		return ID{}, false, nil
	}
	var val string
	for _, t := range ev.Tags {
		if len(t) == 0 || t[0] != "h" {
			continue
		}
		if len(t) < 2 {
			return ID{}, false, ErrInvalidTag
		}
		if ok && t[1] != val {
			return ID{}, false, ErrInvalidTag
		}
		val, ok = t[1], true
	}
	if !ok {
		return ID{}, false, nil
	}
	id, valid := ParseID(val)
	if !valid || id.IsZero() {
		return ID{}, false, ErrInvalidTag
	}
	return id, true, nil
}

// Scope is the set of channels a read may return events of, besides the
// community-wide events (channel NULL), which every scope includes. The
// zero Scope is community-wide events only: a caller that forgets to
// compute access reads no channel at all (fail closed).
type Scope struct {
	all      bool
	channels []ID // sorted, distinct
}

// AllChannels is the scope of trusted internal readers (tools, tests,
// the relay's own state lookups): every channel.
func AllChannels() Scope { return Scope{all: true} }

// ScopeOf is the scope of the community-wide events plus the events
// of the given channels.
func ScopeOf(ids ...ID) Scope {
	s := slices.Clone(ids)
	slices.SortFunc(s, func(a, b ID) int {
		for i := range a {
			if a[i] != b[i] {
				return int(a[i]) - int(b[i])
			}
		}
		return 0
	})
	s = slices.Compact(s)
	return Scope{channels: s}
}

// All reports whether the scope covers every channel.
func (s Scope) All() bool { return s.all }

// Channels returns the scope's channels, sorted (nil for AllChannels).
func (s Scope) Channels() []ID { return s.channels }

// Contains reports whether the scope covers channel id.
func (s Scope) Contains(id ID) bool {
	if s.all {
		return true
	}
	_, found := slices.BinarySearchFunc(s.channels, id, func(a, b ID) int {
		for i := range a {
			if a[i] != b[i] {
				return int(a[i]) - int(b[i])
			}
		}
		return 0
	})
	return found
}
