package nostr

import (
	"strconv"
	"strings"
)

// Name returns the tag's name (element 0), or "" for an empty tag.
func (t Tag) Name() string {
	if len(t) == 0 {
		return ""
	}
	return t[0]
}

// Value returns the tag's first value (element 1), or "" if it has none.
func (t Tag) Value() string {
	if len(t) < 2 {
		return ""
	}
	return t[1]
}

// Find returns the first tag named name that has at least one value, or nil.
func (t Tags) Find(name string) Tag {
	for _, tag := range t {
		if len(tag) >= 2 && tag[0] == name {
			return tag
		}
	}
	return nil
}

// All returns every tag named name that has at least one value, in order
// (nil if there is none).
func (t Tags) All(name string) []Tag {
	var out []Tag
	for _, tag := range t {
		if len(tag) >= 2 && tag[0] == name {
			out = append(out, tag)
		}
	}
	return out
}

// DTag returns the value of the event's first "d" tag, or "" when it has
// none: NIP-01 treats a missing d tag and an empty one alike.
func (e *Event) DTag() string {
	return e.Tags.Find("d").Value()
}

// Expiration returns the NIP-40 expiration time (unix seconds) from the first
// "expiration" tag. ok is false when there is no such tag or its value is not
// a plain non-negative decimal integer.
func (e *Event) Expiration() (ts int64, ok bool) {
	v := e.Tags.Find("expiration").Value()
	if v == "" {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// ParseCoordinate parses a NIP-01 address "kind:pubkey:d" (the value of an
// "a" tag) and reports whether it is well formed: kind in canonical decimal
// (no sign, no leading zero, at most MaxKind), pubkey exactly 64 lowercase
// hex characters, and d the rest, which may be empty and may itself contain
// ':'. It is the one parser of coordinates in Buzz; callers decide what a
// kind that is neither replaceable nor addressable means to them.
func ParseCoordinate(s string) (kind int, pubkey, d string, ok bool) {
	k, rest, found := strings.Cut(s, ":")
	if !found {
		return 0, "", "", false
	}
	pubkey, d, found = strings.Cut(rest, ":")
	if !found || !IsLowerHex(pubkey, 64) {
		return 0, "", "", false
	}
	if k == "" || len(k) > len(strconv.Itoa(MaxKind)) || (len(k) > 1 && k[0] == '0') {
		return 0, "", "", false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return 0, "", "", false
		}
		kind = kind*10 + int(k[i]-'0')
	}
	if kind > MaxKind {
		return 0, "", "", false
	}
	return kind, pubkey, d, true
}

// Coordinate returns the event's NIP-01 address: "kind:pubkey:d" for an
// addressable kind, "kind:pubkey:" for a replaceable kind, and "" for any
// other kind.
func (e *Event) Coordinate() string {
	switch {
	case IsAddressable(e.Kind):
		return strconv.Itoa(e.Kind) + ":" + e.PubKey + ":" + e.DTag()
	case IsReplaceable(e.Kind):
		return strconv.Itoa(e.Kind) + ":" + e.PubKey + ":"
	}
	return ""
}
