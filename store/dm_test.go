package store_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
)

func TestDMParticipants(t *testing.T) {
	key := func(b byte) string { return strings.Repeat(hex.EncodeToString([]byte{b}), 32) }
	a, b, c := key(0x0a), key(0x0b), key(0x0c)
	many := make([]string, channel.MaxDMParticipants+1)
	for i := range many {
		many[i] = key(byte(0x10 + i))
	}
	for _, tc := range []struct {
		name         string
		actor        string
		participants []string
		ok           bool
	}{
		{"two, actor first", a, []string{a, b}, true},
		{"three, actor last", c, []string{a, b, c}, true},
		{"the most there may be", many[0], many[:channel.MaxDMParticipants], true},
		{"one more than that", many[0], many, false},
		{"actor not among them", c, []string{a, b}, false},
		{"actor alone", a, []string{a}, false},
		{"none", a, nil, false},
		{"not sorted", a, []string{b, a}, false},
		{"repeated", a, []string{a, a}, false},
		{"upper-case hex", a, []string{a, strings.ToUpper(b)}, false},
		{"short key", a, []string{a, b[:62]}, false},
		{"not hex", a, []string{a, "zz" + b[2:]}, false},
	} {
		keys, ok := store.DMParticipants(tc.actor, tc.participants)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if !ok {
			if keys != nil {
				t.Errorf("%s: keys = %x, want nil", tc.name, keys)
			}
			continue
		}
		if len(keys) != len(tc.participants) {
			t.Fatalf("%s: %d keys for %d participants", tc.name, len(keys), len(tc.participants))
		}
		for i, k := range keys {
			if want, _ := hex.DecodeString(tc.participants[i]); !bytes.Equal(k, want) {
				t.Errorf("%s: key %d = %x, want %s", tc.name, i, k, tc.participants[i])
			}
		}
	}
}
