package messaging

import (
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
)

var (
	idA = strings.Repeat("a", 64)
	idB = strings.Repeat("b", 64)
)

func ev(kind int, content string, tags ...nostr.Tag) *nostr.Event {
	return &nostr.Event{Kind: kind, Content: content, Tags: tags, PubKey: strings.Repeat("1", 64)}
}

func TestValidate(t *testing.T) {
	diffTags := []nostr.Tag{{"repo", "https://github.com/x/y"}, {"commit", "abc1234"}}
	cases := []struct {
		name string
		ev   *nostr.Event
		want string // "" = accepted
	}{
		{"profile object", ev(0, `{"name":"a"}`), ""},
		{"profile not JSON", ev(0, `{name`), MsgProfileNotJSON},
		{"profile empty", ev(0, ``), MsgProfileNotJSON},
		{"profile array", ev(0, `[1]`), MsgProfileNotObject},
		{"edit", ev(KindEdit, "new", nostr.Tag{"e", idA}), ""},
		{"edit without e", ev(KindEdit, "new"), MsgEditNoTarget},
		{"edit with a bad e", ev(KindEdit, "new", nostr.Tag{"e", "xyz"}), MsgEditNoTarget},
		{"reaction", ev(KindReaction, "🔥", nostr.Tag{"e", idA}), ""},
		{"reaction empty", ev(KindReaction, "", nostr.Tag{"e", idA}), ""},
		{"reaction without e", ev(KindReaction, "+"), MsgReactionNoTarget},
		{"reaction 64 chars", ev(KindReaction, strings.Repeat("é", 64), nostr.Tag{"e", idA}), ""},
		{"reaction 65 chars", ev(KindReaction, strings.Repeat("é", 65), nostr.Tag{"e", idA}), "invalid: reaction emoji exceeds 64 characters (got 65)"},
		{"diff", ev(KindDiff, "--- a\n+++ b\n", diffTags...), ""},
		{"diff 60 KB", ev(KindDiff, strings.Repeat("x", MaxDiffBytes), diffTags...), ""},
		{"diff too big", ev(KindDiff, strings.Repeat("x", MaxDiffBytes+1), diffTags...), "invalid: diff content exceeds 60KB limit (got 61441 bytes)"},
		{"diff no repo", ev(KindDiff, "d", nostr.Tag{"commit", "abc1234"}), MsgDiffNoRepo},
		{"diff no commit", ev(KindDiff, "d", nostr.Tag{"repo", "https://x"}), MsgDiffNoCommit},
		{"diff ftp repo", ev(KindDiff, "d", nostr.Tag{"repo", "ftp://x"}, nostr.Tag{"commit", "abc1234"}), MsgDiffRepoURL},
		{"diff short sha", ev(KindDiff, "d", nostr.Tag{"repo", "https://x"}, nostr.Tag{"commit", "abc12"}), MsgDiffCommit},
		{"diff parent", ev(KindDiff, "d", append(diffTags, nostr.Tag{"parent-commit", "zz"})...), MsgDiffParent},
		{"diff branch", ev(KindDiff, "d", append(diffTags, nostr.Tag{"branch", "feature"})...), MsgDiffBranch},
		{"diff branch ok", ev(KindDiff, "d", append(diffTags, nostr.Tag{"branch", "feature", "main"})...), ""},
		{"diff pr 0", ev(KindDiff, "d", append(diffTags, nostr.Tag{"pr", "0"})...), MsgDiffPR},
		{"diff pr", ev(KindDiff, "d", append(diffTags, nostr.Tag{"pr", "12"})...), ""},
		{"vote", ev(KindForumVote, "+", nostr.Tag{"e", idA}), ""},
		{"vote without e", ev(KindForumVote, "+"), MsgVoteNoTarget},
		{"vote with a bad e", ev(KindForumVote, "+", nostr.Tag{"e", "xyz"}), MsgVoteNoTarget},
		{"a forum post", ev(KindForumPost, "# hi"), ""},
		{"a message", ev(KindMessage, "hi"), ""},
		{"a note", ev(1, "not json"), ""},
	}
	for _, tc := range cases {
		err := Validate(tc.ev)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseReaction(t *testing.T) {
	r, err := ParseReaction(ev(KindReaction, "", nostr.Tag{"e", idA}, nostr.Tag{"p", idB}, nostr.Tag{"e", idB}))
	if err != nil || r.Target != idB || r.Emoji != "+" {
		t.Fatalf("ParseReaction = %+v, %v; want the last e and +", r, err)
	}
}

func TestCurrentText(t *testing.T) {
	msg := ev(KindMessage, "first")
	msg.ID = idA
	mine := func(at int64, id, text string) *nostr.Event {
		e := ev(KindEdit, text, nostr.Tag{"e", idA})
		e.CreatedAt, e.ID = at, id
		return e
	}
	other := mine(50, strings.Repeat("c", 64), "hijack")
	other.PubKey = strings.Repeat("2", 64)
	elsewhere := ev(KindEdit, "elsewhere", nostr.Tag{"e", idB})
	elsewhere.CreatedAt = 99
	if got := CurrentText(msg, nil); got != "first" {
		t.Fatalf("no edits: %q", got)
	}
	edits := []*nostr.Event{mine(10, strings.Repeat("d", 64), "second"), mine(20, strings.Repeat("f", 64), "third"), mine(20, strings.Repeat("e", 64), "third, lower id"), other, elsewhere}
	if got := CurrentText(msg, edits); got != "third, lower id" {
		t.Fatalf("CurrentText = %q", got)
	}
}

func TestParseKinds(t *testing.T) {
	off, err := ParseKinds("")
	if err != nil || off.On() || !off.Allows(12345) {
		t.Fatalf("empty: %v %v", off, err)
	}
	k, err := ParseKinds("buzz, 30023,5000-5999")
	if err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[int]bool{9: true, 7: true, 40008: true, 30023: true, 5000: true, 5999: true, 6000: false, 12345: false, 39000: false, 20002: true} {
		if k.Allows(kind) != want {
			t.Errorf("Allows(%d) = %v", kind, !want)
		}
	}
	if again, err := ParseKinds(k.String()); err != nil || again.String() != k.String() {
		t.Fatalf("round trip %q: %q, %v", k.String(), again.String(), err)
	}
	if b := BuzzKinds(); !b.On() || !b.Allows(40003) || b.Allows(1) == false || b.Allows(4) {
		t.Fatalf("BuzzKinds: %s", b)
	}
	for _, bad := range []string{"x", "5-1", "-1", "70000", "1,,2", "buzz,1-"} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("ParseKinds(%q) accepted", bad)
		}
	}
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{"", "+", `{"a":1}`, "[", strings.Repeat("x", 70)} {
		f.Add(0, s, "e", idA)
		f.Add(KindDiff, s, "repo", "https://x")
		f.Add(KindReaction, s, "e", "zz")
		f.Add(KindEdit, s, "commit", "abcdef0")
	}
	f.Fuzz(func(t *testing.T, kind int, content, tag, val string) {
		e := ev(kind, content, nostr.Tag{tag, val}, nostr.Tag{"commit", val}, nostr.Tag{"branch", val})
		err := Validate(e)
		if err != nil && !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Fatalf("refusal without the invalid: prefix: %q", err)
		}
		if kind == KindReaction && err == nil {
			r, _ := ParseReaction(e)
			if r.Emoji == "" || !nostr.IsLowerHex(r.Target, 64) {
				t.Fatalf("accepted reaction %+v", r)
			}
		}
		_, _ = ParseKinds(content)
	})
}

func TestChannelMessageKinds(t *testing.T) {
	for kind := 0; kind <= nostr.MaxKind; kind++ {
		want := kind >= KindMessage && kind <= KindDiff
		if IsChannelMessage(kind) != want {
			t.Fatalf("IsChannelMessage(%d) = %v", kind, !want)
		}
	}
}
