package channel_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

func hexKey(c byte) string { return strings.Repeat(string(c), 64) }

func TestDMID(t *testing.T) {
	a, b, c := hexKey('a'), hexKey('b'), hexKey('c')
	id := channel.DMID([]string{a, b, c})
	if id != channel.DMID([]string{c, a, b, a}) {
		t.Fatal("the id depends on the order or repeats of the participants")
	}
	if id == channel.DMID([]string{a, b}) || id == channel.DMID([]string{a, b, hexKey('d')}) {
		t.Fatal("two participant sets share an id")
	}
	if !channel.IsDMID(id) {
		t.Fatal("a conversation id is not recognised")
	}
	if got, ok := channel.ParseID(id.String()); !ok || got != id {
		t.Fatalf("the id's text %q does not parse back", id.String())
	}
	for _, gid := range []string{"pizza-lovers", "0b8e5a5e-4c11-4d2a-9b0e-3c2f1a7d9e10", strings.Repeat("z", 128)} {
		if other, _ := channel.ParseID(gid); channel.IsDMID(other) {
			t.Fatalf("group id %q is in the conversations' id space", gid)
		}
	}
}

func TestDMCreateReserved(t *testing.T) {
	id := channel.DMID([]string{hexKey('a'), hexKey('b')})
	for _, tags := range []nostr.Tags{{{"h", id.String()}}, {{"h", "fresh-group"}, {"channel_type", "dm"}}} {
		gid := tags[0][1]
		cid, _ := channel.ParseID(gid)
		ev := &nostr.Event{Kind: nostr.KindCreateChannel, PubKey: hexKey('a'), Tags: tags}
		if _, err := channel.ParseCommand(ev, cid); err == nil {
			t.Fatalf("9007 %v accepted", tags)
		}
	}
}

// FuzzDMOpenParticipants checks DMOpenParticipants against an independent
// reading of Buzz's rule: the p tags (1 to 8 of them, each 64 lowercase
// hex) and the author, sorted and distinct, at least two.
func FuzzDMOpenParticipants(f *testing.F) {
	f.Add(hexKey('a'), "p", hexKey('b'), "p", hexKey('c'), uint8(2))
	f.Add(hexKey('a'), "p", hexKey('a'), "e", hexKey('c'), uint8(1))
	f.Add(hexKey('a'), "p", "ABC", "p", "", uint8(9))
	f.Fuzz(func(t *testing.T, author, n1, v1, n2, v2 string, extra uint8) {
		if !nostr.IsLowerHex(author, 64) {
			return
		}
		tags := nostr.Tags{{n1, v1}, {n2, v2}}
		for i := range int(extra % 12) {
			tags = append(tags, nostr.Tag{"p", strings.Repeat(string(rune('0'+i%10)), 64)})
		}
		ev := &nostr.Event{Kind: nostr.KindDMOpen, PubKey: author, Tags: tags}
		got, refusal := channel.DMOpenParticipants(ev)

		var ps []string
		bad := false
		for _, tg := range tags {
			if tg[0] != "p" {
				continue
			}
			if !nostr.IsLowerHex(tg[1], 64) {
				bad = true
			}
			ps = append(ps, tg[1])
		}
		want := append(slices.Clone(ps), author)
		slices.Sort(want)
		want = slices.Compact(want)
		switch {
		case bad:
			if !strings.HasPrefix(refusal, "invalid: bad pubkey hex: ") {
				t.Fatalf("malformed p accepted: %q %v", refusal, got)
			}
		case len(ps) == 0 || len(want) < 2:
			if refusal != channel.MsgDMNoParticipants {
				t.Fatalf("no other participant: %q %v", refusal, got)
			}
		case len(ps) > 8:
			if refusal != channel.MsgDMTooManyOthers {
				t.Fatalf("%d p tags: %q", len(ps), refusal)
			}
		default:
			if refusal != "" || !slices.Equal(got, want) {
				t.Fatalf("participants %v %q, want %v", got, refusal, want)
			}
			if len(got) > channel.MaxDMParticipants {
				t.Fatalf("%d participants", len(got))
			}
		}
	})
}
