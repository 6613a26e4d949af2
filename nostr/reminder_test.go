package nostr

import (
	"strconv"
	"testing"
)

// notBeforeReference is NIP-ER's rule for a not_before value, written
// independently of ParseNotBefore: digits only, no leading zero but "0",
// an exact integer in 0..2^53-1.
func notBeforeReference(v string) (int64, bool) {
	if v == "" || (len(v) > 1 && v[0] == '0') {
		return 0, false
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > MaxNotBefore {
		return 0, false
	}
	return int64(n), true
}

func FuzzParseNotBefore(f *testing.F) {
	for _, s := range []string{"0", "00", "1770000000", "007", "-1", "+5", "1.5", " 1", "1e9", "",
		"9007199254740991", "9007199254740992", "18446744073709551616", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := ParseNotBefore(v)
		want, wantOK := notBeforeReference(v)
		if ok != wantOK || got != want {
			t.Fatalf("ParseNotBefore(%q) = %d, %v; want %d, %v", v, got, ok, want, wantOK)
		}
	})
}

func TestEventNotBefore(t *testing.T) {
	for _, tc := range []struct {
		tags Tags
		want int64
		ok   bool
	}{
		{Tags{{"not_before", "5"}}, 5, true},
		{Tags{{"d", "x"}}, 0, false},
		{Tags{{"not_before", "5"}, {"not_before", "5"}}, 0, false},
		{Tags{{"not_before", "05"}}, 0, false},
		{Tags{{"not_before"}}, 0, false},
	} {
		got, ok := (&Event{Tags: tc.tags}).NotBefore()
		if got != tc.want || ok != tc.ok {
			t.Errorf("NotBefore(%v) = %d, %v", tc.tags, got, ok)
		}
	}
}
