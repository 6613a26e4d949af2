package nostr

// KindReminder is a NIP-ER event reminder (addressable): encrypted to its
// author, readable only by its authenticated author (IsAuthorOnly), with a
// public "not_before" tag saying when it falls due (ParseNotBefore).
const KindReminder = 30300

// Buzz's other author-only kinds (IsAuthorOnly): a NIP-PL encrypted push
// lease and a NIP-PMA private managed agent.
const (
	KindPushLease           = 30350
	KindPrivateManagedAgent = 30179
)

// MaxNotBefore is the largest "not_before" value NIP-ER allows
// (2^53 - 1, the largest integer a JSON number holds exactly).
const MaxNotBefore = 9007199254740991

// IsAuthorOnly reports whether events of kind k are readable only by their
// authenticated author: no other reader may learn of their existence,
// count, tags, content or search matches (Buzz's AUTHOR_ONLY_KINDS:
// reminders, push leases and private managed agents). They never match a
// search (IsSearchable).
func IsAuthorOnly(k int) bool {
	switch k {
	case KindReminder, KindPushLease, KindPrivateManagedAgent:
		return true
	}
	return false
}

// ParseNotBefore parses a NIP-ER "not_before" value: a decimal Unix
// timestamp of ASCII digits only, no sign, no leading zero except "0",
// at most MaxNotBefore. ok is false for anything else.
func ParseNotBefore(v string) (ts int64, ok bool) {
	if v == "" || len(v) > 16 || (len(v) > 1 && v[0] == '0') {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > MaxNotBefore {
		return 0, false
	}
	return n, true
}

// NotBefore returns e's one well-formed "not_before" value (NIP-ER), and
// false when it has none, several, or a malformed one.
func (e *Event) NotBefore() (ts int64, ok bool) {
	found := false
	for _, t := range e.Tags {
		if len(t) < 2 || t[0] != "not_before" {
			continue
		}
		if found {
			return 0, false
		}
		found = true
		if ts, ok = ParseNotBefore(t[1]); !ok {
			return 0, false
		}
	}
	return ts, found
}
