package store_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

func TestThreadOf(t *testing.T) {
	a, b, c := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	for _, tc := range []struct {
		name string
		tags nostr.Tags
		want store.ThreadRef
		ok   bool
	}{
		{"none", nil, store.ThreadRef{}, false},
		{"reply only", nostr.Tags{{"e", a, "", "reply"}}, store.ThreadRef{Root: a, Parent: a}, true},
		{"root and reply", nostr.Tags{{"e", b, "", "reply"}, {"e", a, "", "root"}}, store.ThreadRef{Root: a, Parent: b}, true},
		{"root only", nostr.Tags{{"e", a, "", "root"}}, store.ThreadRef{}, false},
		{"positional", nostr.Tags{{"e", a}, {"e", b}}, store.ThreadRef{}, false},
		{"marker in third place", nostr.Tags{{"e", a, "reply"}}, store.ThreadRef{}, false},
		{"last valid wins", nostr.Tags{{"e", a, "", "reply"}, {"e", "zz", "", "reply"}, {"e", c, "", "reply", "pubkey"}}, store.ThreadRef{Root: c, Parent: c}, true},
		{"upper case", nostr.Tags{{"e", strings.ToUpper(b), "wss://r", "reply"}}, store.ThreadRef{Root: b, Parent: b}, true},
		{"mention", nostr.Tags{{"e", a, "", "mention"}}, store.ThreadRef{}, false},
	} {
		got, ok := store.ThreadOf(&nostr.Event{Tags: tc.tags})
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: ThreadOf = %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

var hex64 = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// FuzzThreadOf checks ThreadOf against an independent reading of the rule
// (the one migration 240's trigger applies in SQL): the last e tag of four
// or more elements with a 64-hex value marked "reply" is the parent, the
// last marked "root" the root, lower-cased.
func FuzzThreadOf(f *testing.F) {
	a := strings.Repeat("a", 64)
	for _, seed := range []string{
		`[]`,
		`[["e","` + a + `","","reply"]]`,
		`[["e","` + a + `","","root"],["e","` + strings.ToUpper(a) + `","x","reply"]]`,
		`[["e","` + a + `","reply"],["e","zz","","reply"],["e"]]`,
		`[["h","x"],["e","` + a + `","","root","y"]]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var tags nostr.Tags
		if json.Unmarshal(data, &tags) != nil {
			return
		}
		ref, ok := store.ThreadOf(&nostr.Event{Tags: tags})
		var root, parent string
		for _, tg := range tags {
			if len(tg) >= 4 && tg[0] == "e" && hex64.MatchString(tg[1]) {
				switch tg[3] {
				case "root":
					root = strings.ToLower(tg[1])
				case "reply":
					parent = strings.ToLower(tg[1])
				}
			}
		}
		if parent == "" {
			if ok {
				t.Fatalf("ThreadOf(%s) = %+v, want no reply", data, ref)
			}
			return
		}
		if root == "" {
			root = parent
		}
		if !ok || ref.Parent != parent || ref.Root != root {
			t.Fatalf("ThreadOf(%s) = %+v %v, want root %s parent %s", data, ref, ok, root, parent)
		}
		if !nostr.IsLowerHex(ref.Root, 64) || !nostr.IsLowerHex(ref.Parent, 64) {
			t.Fatalf("ThreadOf(%s) = %+v: not lowercase ids", data, ref)
		}
	})
}
