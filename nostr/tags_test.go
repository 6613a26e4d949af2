package nostr

import (
	"strings"
	"testing"
)

func TestParseCoordinate(t *testing.T) {
	pk := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in     string
		ok     bool
		kind   int
		pubkey string
		d      string
	}{
		{"30023:" + pk + ":post", true, 30023, pk, "post"},
		{"30023:" + pk + ":a:b", true, 30023, pk, "a:b"},
		{"0:" + pk + ":", true, 0, pk, ""},
		{"65535:" + pk + ":", true, 65535, pk, ""},
		{"01:" + pk + ":x", false, 0, "", ""},     // leading zero: not canonical
		{"030023:" + pk + ":x", false, 0, "", ""}, // leading zero, six digits
		{"+1:" + pk + ":x", false, 0, "", ""},
		{"-1:" + pk + ":x", false, 0, "", ""},
		{"1e3:" + pk + ":x", false, 0, "", ""},
		{"65536:" + pk + ":x", false, 0, "", ""}, // beyond MaxKind
		{"99999:" + pk + ":x", false, 0, "", ""},
		{":" + pk + ":x", false, 0, "", ""},
		{"1:" + strings.ToUpper(pk) + ":x", false, 0, "", ""},
		{"1:" + pk[:62] + ":x", false, 0, "", ""},
		{"1:" + pk, false, 0, "", ""}, // no d part
		{"1", false, 0, "", ""},
		{"", false, 0, "", ""},
	} {
		kind, pubkey, d, ok := ParseCoordinate(tc.in)
		if ok != tc.ok || kind != tc.kind || pubkey != tc.pubkey || d != tc.d {
			t.Errorf("ParseCoordinate(%q) = %d, %q, %q, %v; want %d, %q, %q, %v",
				tc.in, kind, pubkey, d, ok, tc.kind, tc.pubkey, tc.d, tc.ok)
		}
	}
}
