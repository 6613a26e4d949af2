package channel_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

var testChannel, _ = channel.ParseID("0b6f6d9e-2d1c-4c7e-9a55-0123456789ab")

func TestParseCommand(t *testing.T) {
	pk := strings.Repeat("a", 64)
	target := strings.Repeat("b", 64)
	ev := func(kind int, tags ...nostr.Tag) *nostr.Event {
		return &nostr.Event{Kind: kind, PubKey: pk, Tags: append(nostr.Tags{{"h", testChannel.String()}}, tags...)}
	}
	cmd, err := channel.ParseCommand(ev(nostr.KindCreateChannel, nostr.Tag{"name", "general"}, nostr.Tag{"visibility", "private"},
		nostr.Tag{"channel_type", "forum"}, nostr.Tag{"about", "a"}), testChannel)
	if err != nil || *cmd.Name != "general" || cmd.Visibility != channel.VisibilityPrivate || cmd.Type != channel.TypeForum || *cmd.About != "a" || cmd.Actor != pk {
		t.Fatalf("create = %+v, %v", cmd, err)
	}
	cmd, err = channel.ParseCommand(ev(nostr.KindPutUser, nostr.Tag{"p", target, "admin"}), testChannel)
	if err != nil || cmd.Target != target || cmd.Role != channel.RoleAdmin {
		t.Fatalf("put = %+v, %v", cmd, err)
	}
	cmd, err = channel.ParseCommand(ev(nostr.KindPutUser, nostr.Tag{"p", target, "moderator"}), testChannel)
	if err != nil || cmd.Role != "moderator" {
		t.Fatalf("put with a custom role = %+v, %v", cmd, err)
	}
	cmd, err = channel.ParseCommand(ev(nostr.KindEditMetadata, nostr.Tag{"picture", "https://x"}), testChannel)
	if err != nil || cmd.Name != nil || *cmd.Picture != "https://x" {
		t.Fatalf("edit = %+v, %v", cmd, err)
	}
	// NIP-29 flags and their negations; Buzz's visibility implies all four.
	cmd, err = channel.ParseCommand(ev(nostr.KindCreateChannel, nostr.Tag{"private"}, nostr.Tag{"closed"}), testChannel)
	if err != nil || cmd.Name != nil || cmd.Visibility != "" || !*cmd.Private || !*cmd.Closed || *cmd.Restricted || *cmd.Hidden {
		t.Fatalf("flags = %+v, %v", cmd, err)
	}
	cmd, err = channel.ParseCommand(ev(nostr.KindEditMetadata, nostr.Tag{"visibility", "private"}, nostr.Tag{"open"}), testChannel)
	if err != nil || cmd.Visibility != channel.VisibilityPrivate || *cmd.Closed || cmd.Private != nil || cmd.Restricted != nil {
		t.Fatalf("visibility + open = %+v, %v", cmd, err)
	}
	cmd, err = channel.ParseCommand(ev(nostr.KindEditMetadata, nostr.Tag{"public"}, nostr.Tag{"unrestricted"}, nostr.Tag{"visible"}), testChannel)
	if err != nil || *cmd.Private || *cmd.Closed || *cmd.Restricted || *cmd.Hidden {
		t.Fatalf("negations = %+v, %v", cmd, err)
	}
	cmd, err = channel.ParseCommand(ev(nostr.KindCreateInvite, nostr.Tag{"code", "sesame"}), testChannel)
	if err != nil || cmd.Code != "sesame" {
		t.Fatalf("invite = %+v, %v", cmd, err)
	}
	cmd, err = channel.ParseCommand(ev(nostr.KindJoinRequest, nostr.Tag{"code", "sesame"}), testChannel)
	if err != nil || cmd.Code != "sesame" || cmd.Invited {
		t.Fatalf("join with code = %+v, %v", cmd, err)
	}
	cmd, err = channel.ParseCommand(ev(nostr.KindEditMetadata, nostr.Tag{"name", "n"}), testChannel)
	if err != nil || cmd.Private != nil || cmd.Closed != nil || cmd.Restricted != nil || cmd.Hidden != nil {
		t.Fatalf("edit without flags changes flags: %+v, %v", cmd, err)
	}
	for i, bad := range []*nostr.Event{
		ev(nostr.KindCreateInvite),
		ev(nostr.KindCreateInvite, nostr.Tag{"code", strings.Repeat("x", channel.MaxInviteCodeLen+1)}),
		ev(nostr.KindCreateChannel, nostr.Tag{"private"}, nostr.Tag{"public"}),
		ev(nostr.KindEditMetadata, nostr.Tag{"closed"}, nostr.Tag{"open"}),
		ev(nostr.KindCreateChannel, nostr.Tag{"name", "a"}, nostr.Tag{"name", "b"}),
		ev(nostr.KindCreateChannel, nostr.Tag{"name", "a"}, nostr.Tag{"visibility", "secret"}),
		ev(nostr.KindCreateChannel, nostr.Tag{"name", "a"}, nostr.Tag{"channel_type", "voice"}),
		ev(nostr.KindPutUser),
		ev(nostr.KindPutUser, nostr.Tag{"p", "nothex"}),
		ev(nostr.KindPutUser, nostr.Tag{"p", target, "ki\x01ng"}),
		ev(nostr.KindPutUser, nostr.Tag{"p", target, strings.Repeat("r", channel.MaxRoleLen+1)}),
		ev(nostr.KindPutUser, nostr.Tag{"p", target}, nostr.Tag{"p", pk}),
		ev(nostr.KindRemoveUser),
		ev(nostr.KindDeleteEvent),
		ev(nostr.KindDeleteEvent, nostr.Tag{"e", "short"}),
		ev(nostr.KindEditMetadata, nostr.Tag{"name", ""}),
		ev(nostr.KindEditMetadata, nostr.Tag{"visibility"}),
	} {
		if _, err := channel.ParseCommand(bad, testChannel); err == nil {
			t.Errorf("case %d: %v accepted", i, bad.Tags)
		}
	}
}

// FuzzParseCommand: whatever the tags, a parsed command is valid and
// describes the event it came from.
func FuzzParseCommand(f *testing.F) {
	f.Add(nostr.KindCreateChannel, `[["name","general"],["visibility","open"]]`)
	f.Add(nostr.KindPutUser, `[["p","`+strings.Repeat("b", 64)+`","guest"]]`)
	f.Add(nostr.KindDeleteEvent, `[["e","`+strings.Repeat("c", 64)+`"],["e","x"]]`)
	f.Add(nostr.KindEditMetadata, `[["about"],["picture","p"],[]]`)
	f.Add(nostr.KindEditMetadata, `[["private"],["open"],["visibility","private"],["hidden"]]`)
	f.Add(nostr.KindCreateChannel, `[["closed"],["closed"],["restricted"],["unrestricted"]]`)
	f.Add(nostr.KindCreateInvite, `[["code","sesame"]]`)
	f.Add(nostr.KindJoinRequest, `[["code",""],["previous","0011aabb"]]`)
	f.Add(nostr.KindPutUser, `[["p","`+strings.Repeat("b", 64)+`","moderator"]]`)
	f.Fuzz(func(t *testing.T, kind int, tagsJSON string) {
		var tags nostr.Tags
		if json.Unmarshal([]byte(tagsJSON), &tags) != nil {
			return
		}
		ev := &nostr.Event{Kind: kind, PubKey: strings.Repeat("a", 64), Tags: tags}
		cmd, err := channel.ParseCommand(ev, testChannel)
		if err != nil {
			return
		}
		if cmd.Kind != kind || cmd.Channel != testChannel || cmd.Actor != ev.PubKey {
			t.Fatalf("command %+v does not describe its event", cmd)
		}
		if err := cmd.Validate(); err != nil {
			t.Fatalf("parsed an invalid command: %+v", cmd)
		}
	})
}
