package messaging

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/buzzrelay/buzz/nostr"
)

// MsgUnknownKind is the refusal of a kind outside the allow-list (Buzz's
// text).
const MsgUnknownKind = "restricted: unknown event kind"

// buzzKinds are the kinds a Buzz relay accepts from clients: the ones its
// ingest gives a meaning (and scope) to, the ephemeral kinds it relays,
// and the kinds this relay itself acts on (invites, projects) so that a
// Buzz-compatible profile keeps every feature working. Kinds only the
// relay signs (39000–39003, 44100/44101, 46001–46012, …) are not here.
var buzzKinds = []int{
	0, 1, 3, 5, 7, 9, // profile, note, contacts, deletion, reaction, chat message
	1059,                                           // gift wrap
	1617, 1618, 1619, 1621, 1630, 1631, 1632, 1633, // NIP-34
	1984,                                                 // report
	9000, 9001, 9002, 9005, 9007, 9008, 9009, 9021, 9022, // NIP-29 commands
	9030, 9031, 9032, 9033, 9035, 9036, // community membership, identity archive
	9040, 9041, 9042, 9043, 9044, // moderation
	10000, 10001, 10002, 10003, 10030, 10100, // lists, agent profile
	20001, 20002, 24134, 24200, 24810, 28936, // presence, typing, pairing, observer, huddle reaction, leave
	30000, 30003, 30023, 30030, 30078, 30174, 30175, 30176, 30177, 30178, 30179, 30300, 30315, 30350,
	30617, 30618, 30620, 30621,
	40002, 40003, 40004, 40005, 40006, 40007, 40008, 40100, // channel messages, canvas
	41010, 41011, 41012, // DMs
	42000,               // product feedback
	44200,               // agent turn metric
	45001, 45002, 45003, // forum
	46020, 46030, 46031, // workflow trigger, approvals
	47010,                             // project change (NIP-PC)
	48100, 48101, 48102, 48103, 48106, // huddles
}

// Kinds is an allow-list of event kinds. The zero Kinds allows every kind
// (the list is off). It is immutable once parsed.
type Kinds struct {
	on     bool
	kinds  []int    // sorted, distinct
	ranges [][2]int // inclusive
}

// BuzzKinds is the allow-list of a Buzz-compatible relay: the kinds Buzz
// accepts from clients.
func BuzzKinds() Kinds {
	k := Kinds{on: true, kinds: slices.Clone(buzzKinds)}
	slices.Sort(k.kinds)
	k.kinds = slices.Compact(k.kinds)
	return k
}

// ParseKinds parses an allow-list setting: "" or "off" (every kind),
// or a comma-separated list of kinds ("1"), inclusive ranges ("5000-5999")
// and "buzz" (BuzzKinds), e.g. "buzz,30023,5000-5999".
func ParseKinds(s string) (Kinds, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "off" {
		return Kinds{}, nil
	}
	k := Kinds{on: true}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "buzz":
			k.kinds = append(k.kinds, buzzKinds...)
		case strings.Contains(part, "-"):
			lo, hi, _ := strings.Cut(part, "-")
			a, err1 := parseKind(lo)
			b, err2 := parseKind(hi)
			if err1 != nil || err2 != nil || a > b {
				return Kinds{}, fmt.Errorf("kind allow-list: %q is not a range of kinds (low-high, 0–%d)", part, nostr.MaxKind)
			}
			k.ranges = append(k.ranges, [2]int{a, b})
		default:
			n, err := parseKind(part)
			if err != nil {
				return Kinds{}, fmt.Errorf("kind allow-list: %q is not a kind, a range or \"buzz\"", part)
			}
			k.kinds = append(k.kinds, n)
		}
	}
	slices.Sort(k.kinds)
	k.kinds = slices.Compact(k.kinds)
	return k, nil
}

func parseKind(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > nostr.MaxKind {
		return 0, fmt.Errorf("not a kind: %q", s)
	}
	return n, nil
}

// On reports whether the list restricts anything.
func (k Kinds) On() bool { return k.on }

// Allows reports whether kind may be published: always when the list is
// off.
func (k Kinds) Allows(kind int) bool {
	if !k.on {
		return true
	}
	if _, ok := slices.BinarySearch(k.kinds, kind); ok {
		return true
	}
	for _, r := range k.ranges {
		if r[0] <= kind && kind <= r[1] {
			return true
		}
	}
	return false
}

// String is the list in ParseKinds' syntax ("off" when off).
func (k Kinds) String() string {
	if !k.on {
		return "off"
	}
	parts := make([]string, 0, len(k.kinds)+len(k.ranges))
	for _, n := range k.kinds {
		parts = append(parts, strconv.Itoa(n))
	}
	for _, r := range k.ranges {
		parts = append(parts, strconv.Itoa(r[0])+"-"+strconv.Itoa(r[1]))
	}
	return strings.Join(parts, ",")
}
