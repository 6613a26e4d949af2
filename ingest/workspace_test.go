package ingest

import (
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/store"
)

func TestWorkspaceIcon(t *testing.T) {
	for _, tc := range []struct {
		tags          [][]string
		icon, refusal string
	}{
		{nil, "", ""},
		{[][]string{{"icon", ""}}, "", ""},
		{[][]string{{"icon", "https://example.com/i.png"}}, "https://example.com/i.png", ""},
		{[][]string{{"icon", "https://example.com/a b.png"}}, "", MsgWorkspaceIconChars},
		{[][]string{{"icon", "https://example.com/a\nb.png"}}, "", MsgWorkspaceIconChars},
		{[][]string{{"icon", "javascript:alert(1)"}}, "", MsgWorkspaceIconURL},
		{[][]string{{"icon", "data:image/png;base64,AAAA"}}, "", MsgWorkspaceIconURL},
		{[][]string{{"icon", "https://example.com/" + strings.Repeat("a", 2048)}}, "", "invalid: icon URL too long: 2068 bytes (max 2048)"},
		{[][]string{{"icon", "https://example.com/i.png"}, {"thread_replies_in_channel", "true"}}, "", MsgWorkspaceThreadPolicy},
	} {
		icon, refusal := workspaceIcon(tc.tags)
		if icon != tc.icon || refusal != tc.refusal {
			t.Errorf("%q: %q %q, want %q %q", tc.tags, icon, refusal, tc.icon, tc.refusal)
		}
	}
}

// FuzzWorkspaceIcon: whatever the tags, a 9033 either sets an icon the
// profile store accepts (or clears it) or is refused with a NIP-01 prefix.
func FuzzWorkspaceIcon(f *testing.F) {
	f.Add("icon", "https://example.com/i.png")
	f.Add("icon", "data:image/png;base64,AAAA")
	f.Add("thread_replies_in_channel", "on")
	f.Add("icon", "http://[::1]:80/x")
	f.Fuzz(func(t *testing.T, name, value string) {
		icon, refusal := workspaceIcon([][]string{{name, value}})
		switch {
		case refusal != "":
			if icon != "" || !strings.HasPrefix(refusal, "invalid: ") {
				t.Fatalf("refusal %q with icon %q", refusal, icon)
			}
		case icon != "":
			if err := (store.CommunityProfile{Icon: icon}).Validate(); err != nil {
				t.Fatalf("icon %q accepted but the profile refuses it: %v", icon, err)
			}
		}
	})
}
