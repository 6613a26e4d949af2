package ingest

import (
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
)

func projectChangeEvent(content string, tags ...nostr.Tag) *nostr.Event {
	return &nostr.Event{Kind: KindProjectChange, Content: content, Tags: tags}
}

func TestParseProjectChange(t *testing.T) {
	owner := strings.Repeat("a", 64)
	coord := nostr.Tag{"a", "30621:" + owner + ":project:x"}
	rev := nostr.Tag{"expected-revision", "7"}
	ok := `{"v":1,"patch":{"related_channels":{"add":["11111111-1111-4111-8111-111111111111","general"],"remove":[]}}}`
	cases := []struct {
		name    string
		content string
		tags    []nostr.Tag
		want    string
	}{
		{"valid", ok, []nostr.Tag{coord, rev}, ""},
		{"tags reversed", ok, []nostr.Tag{rev, coord}, ""},
		{"one tag", ok, []nostr.Tag{coord}, MsgProjectChangeTags},
		{"three tags", ok, []nostr.Tag{coord, rev, {"h", "x"}}, MsgProjectChangeTags},
		{"two a", ok, []nostr.Tag{coord, coord}, MsgProjectChangeMalform},
		{"a with a relay hint", ok, []nostr.Tag{{"a", coord[1], "wss://x"}, rev}, MsgProjectChangeMalform},
		{"not a project", ok, []nostr.Tag{{"a", "30617:" + owner + ":x"}, rev}, MsgProjectCoordinate},
		{"no d", ok, []nostr.Tag{{"a", "30621:" + owner}, rev}, MsgProjectCoordinate},
		{"upper owner", ok, []nostr.Tag{{"a", "30621:" + strings.Repeat("A", 64) + ":x"}, rev}, MsgProjectOwner},
		{"empty d", ok, []nostr.Tag{{"a", "30621:" + owner + ":"}, rev}, MsgProjectD},
		{"long d", ok, []nostr.Tag{{"a", "30621:" + owner + ":" + strings.Repeat("d", 1025)}, rev}, MsgProjectD},
		{"revision 0", ok, []nostr.Tag{coord, {"expected-revision", "0"}}, MsgProjectRevision},
		{"revision 07", ok, []nostr.Tag{coord, {"expected-revision", "07"}}, MsgProjectRevision},
		{"revision -1", ok, []nostr.Tag{coord, {"expected-revision", "-1"}}, MsgProjectRevision},
		{"revision huge", ok, []nostr.Tag{coord, {"expected-revision", "9223372036854775808"}}, MsgProjectRevisionRange},
		{"v2", `{"v":2,"patch":{"related_channels":{"add":["a"],"remove":[]}}}`, []nostr.Tag{coord, rev}, MsgProjectVersion},
		{"unknown field", `{"v":1,"patch":{"related_channels":{"add":["a"],"remove":[],"future":true}}}`, []nostr.Tag{coord, rev}, "invalid: Project change content: "},
		{"no remove", `{"v":1,"patch":{"related_channels":{"add":["a"]}}}`, []nostr.Tag{coord, rev}, "invalid: Project change content: missing field `remove`"},
		{"not JSON", `{`, []nostr.Tag{coord, rev}, "invalid: Project change content: "},
		{"empty", `{"v":1,"patch":{"related_channels":{"add":[],"remove":[]}}}`, []nostr.Tag{coord, rev}, MsgProjectEmpty},
		{"bad id", `{"v":1,"patch":{"related_channels":{"add":["Not An Id"],"remove":[]}}}`, []nostr.Tag{coord, rev}, MsgProjectChannelID},
		{"duplicate", `{"v":1,"patch":{"related_channels":{"add":["a","a"],"remove":[]}}}`, []nostr.Tag{coord, rev}, MsgProjectDuplicate},
		{"both", `{"v":1,"patch":{"related_channels":{"add":["a"],"remove":["a"]}}}`, []nostr.Tag{coord, rev}, MsgProjectAddRemove},
		{"65", `{"v":1,"patch":{"related_channels":{"add":[` + strings.Repeat(`"a",`, 64) + `"a"],"remove":[]}}}`, []nostr.Tag{coord, rev}, MsgProjectPatchTooBig},
	}
	for _, tc := range cases {
		pc, err := ParseProjectChange(projectChangeEvent(tc.content, tc.tags...))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if tc.want == "" && got != "" || tc.want != "" && !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if tc.name == "valid" && (pc.Owner != owner || pc.D != "project:x" || pc.Expected != 7 || len(pc.Add) != 2) {
			t.Errorf("valid: %+v", pc)
		}
	}
}

func FuzzParseProjectChange(f *testing.F) {
	owner := strings.Repeat("b", 64)
	f.Add("30621:"+owner+":p", "1", `{"v":1,"patch":{"related_channels":{"add":["x"],"remove":[]}}}`)
	f.Add("30621:"+owner+":a:b", "01", `{"v":1}`)
	f.Add("30621::", "9223372036854775807", `{"v":1,"patch":{"related_channels":{"add":[],"remove":["y"]}}}`)
	f.Fuzz(func(t *testing.T, a, rev, content string) {
		pc, err := ParseProjectChange(projectChangeEvent(content, nostr.Tag{"a", a}, nostr.Tag{"expected-revision", rev}))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("refusal without invalid: %q", err)
			}
			return
		}
		if pc.Expected < 1 || !nostr.IsLowerHex(pc.Owner, 64) || pc.D == "" || len(pc.D) > maxProjectD {
			t.Fatalf("accepted %+v", pc)
		}
		if len(pc.Add)+len(pc.Remove) == 0 || len(pc.Add) > 64 || len(pc.Remove) > 64 {
			t.Fatalf("accepted patch %+v", pc)
		}
		seen := map[string]bool{}
		for _, id := range append(append([]string{}, pc.Add...), pc.Remove...) {
			if seen[id] {
				t.Fatalf("accepted a channel twice: %+v", pc)
			}
			seen[id] = true
		}
	})
}
