package ingest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

var fuzzNow = time.Unix(1_800_000_000, 0)

func TestParseModerationCommand(t *testing.T) {
	p := strings.Repeat("b", 64)
	for _, tc := range []struct {
		kind int
		tags nostr.Tags
		ok   bool
	}{
		{nostr.KindBan, nostr.Tags{{"p", p}}, true},
		{nostr.KindBan, nostr.Tags{{"p", p}, {"expiration", "1800000060"}, {"reason", "spam"}}, true},
		{nostr.KindBan, nostr.Tags{{"p", p}, {"expiration", "1800000000"}}, false}, // ended
		{nostr.KindBan, nostr.Tags{{"p", p}, {"p", p}}, false},
		{nostr.KindBan, nostr.Tags{{"p", strings.ToUpper(p)}}, false},
		{nostr.KindTimeout, nostr.Tags{{"p", p}}, false}, // no end
		{nostr.KindTimeout, nostr.Tags{{"p", p}, {"expiration", "+1800000060"}}, false},
		{nostr.KindTimeout, nostr.Tags{{"p", p}, {"expiration", "1800000060"}}, true},
		{nostr.KindUnban, nostr.Tags{{"p", p}, {"expiration", "1"}}, true}, // ignored
		{nostr.KindUntimeout, nostr.Tags{{"p", p}, {"h", "x"}}, false},
		{nostr.KindResolveReport, nostr.Tags{{"e", p}, {"status", "resolved"}}, true},
		{nostr.KindResolveReport, nostr.Tags{{"e", p}, {"status", "open"}}, false},
		{nostr.KindResolveReport, nostr.Tags{{"e", p}}, false},
		{1, nostr.Tags{{"p", p}}, false},
	} {
		cmd, err := ParseModerationCommand(&nostr.Event{Kind: tc.kind, Tags: tc.tags}, fuzzNow)
		if (err == nil) != tc.ok {
			t.Errorf("%d %v: %+v, %v", tc.kind, tc.tags, cmd, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Errorf("error %q has no invalid: prefix", err)
		}
	}
}

// FuzzParseModerationCommand: whatever the tags, a parsed command is one
// the store accepts, with an end in the future when it has one; errors
// are NIP-01 "invalid:" messages.
func FuzzParseModerationCommand(f *testing.F) {
	p := strings.Repeat("a", 64)
	f.Add(nostr.KindBan, `[["p","`+p+`"],["reason","spam"],["expiration","1800000600"]]`)
	f.Add(nostr.KindTimeout, `[["p","`+p+`"],["expiration","99999999999999999999"]]`)
	f.Add(nostr.KindResolveReport, `[["e","`+p+`"],["status","escalated"]]`)
	f.Add(nostr.KindUntimeout, `[["p"],["p","`+p+`"]]`)
	f.Fuzz(func(t *testing.T, kind int, tagsJSON string) {
		var tags nostr.Tags
		if json.Unmarshal([]byte(tagsJSON), &tags) != nil {
			return
		}
		cmd, err := ParseModerationCommand(&nostr.Event{Kind: kind, Tags: tags}, fuzzNow)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("error %q has no invalid: prefix", err)
			}
			return
		}
		a := store.ModerationAction{Action: cmd.Action, Actor: strings.Repeat("c", 64), Target: cmd.Target, Until: cmd.Until, Status: cmd.Status}
		if err := a.Validate(); err != nil {
			t.Fatalf("parsed %+v, which the store refuses", cmd)
		}
		if !cmd.Until.IsZero() && !cmd.Until.After(fuzzNow) {
			t.Fatalf("end %v is not in the future", cmd.Until)
		}
	})
}

// FuzzParseReport: a parsed report names one 64-hex pubkey, at most one
// 64-hex event and a NIP-56 type.
func FuzzParseReport(f *testing.F) {
	p := strings.Repeat("a", 64)
	f.Add(`[["p","` + p + `","spam"]]`)
	f.Add(`[["p","` + p + `"],["e","` + p + `","illegal"]]`)
	f.Add(`[["p","` + p + `"],["e","` + p + `"],["e","` + p + `"]]`)
	f.Fuzz(func(t *testing.T, tagsJSON string) {
		var tags nostr.Tags
		if json.Unmarshal([]byte(tagsJSON), &tags) != nil {
			return
		}
		r, err := ParseReport(&nostr.Event{Kind: nostr.KindReport, Tags: tags})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("error %q has no invalid: prefix", err)
			}
			return
		}
		if !nostr.IsLowerHex(r.TargetPubKey, 64) || (r.TargetEvent != "" && !nostr.IsLowerHex(r.TargetEvent, 64)) {
			t.Fatalf("parsed %+v", r)
		}
		known := false
		for _, ty := range ReportTypes {
			known = known || ty == r.Type
		}
		if !known {
			t.Fatalf("type %q", r.Type)
		}
	})
}

func TestMayModerate(t *testing.T) {
	for _, tc := range []struct {
		actor, target channel.Role
		tm            bool
		want          bool
	}{
		{channel.RoleOwner, channel.RoleAdmin, true, true},
		{channel.RoleAdmin, channel.RoleAdmin, true, false},
		{channel.RoleAdmin, store.RoleModerator, true, true},
		{store.RoleModerator, store.RoleModerator, true, false},
		{store.RoleModerator, channel.RoleMember, true, true},
		{store.RoleModerator, "", false, true},
		{channel.RoleMember, "", false, false},
		{store.RoleModerator, channel.RoleOwner, true, false},
	} {
		if got := MayModerate(tc.actor, true, tc.target, tc.tm); got != tc.want {
			t.Errorf("%s over %s: %v", tc.actor, tc.target, got)
		}
	}
}

// FuzzParseMemberCommand: a parsed 9030/9031/9032 names one 64-hex pubkey
// and a community role PutCommunityMember accepts; 9032 always names its
// role, 9031 never does.
func FuzzParseMemberCommand(f *testing.F) {
	p := strings.Repeat("a", 64)
	f.Add(nostr.KindChangeCommunityRole, `[["p","`+p+`"],["role","moderator"]]`)
	f.Add(nostr.KindAddCommunityMember, `[["p","`+p+`","admin"]]`)
	f.Add(nostr.KindRemoveCommunityMember, `[["p","`+p+`"],["role","member"]]`)
	f.Add(nostr.KindChangeCommunityRole, `[["p","`+p+`","member"],["role","admin"]]`)
	f.Fuzz(func(t *testing.T, kind int, tagsJSON string) {
		var tags nostr.Tags
		if json.Unmarshal([]byte(tagsJSON), &tags) != nil {
			return
		}
		ev := &nostr.Event{Kind: kind, Tags: tags}
		target, role, err := parseMemberCommand(ev)
		if err != nil {
			return
		}
		if !nostr.IsLowerHex(target, 64) || !store.ValidCommunityRole(role) {
			t.Fatalf("parsed %q %q", target, role)
		}
		named := len(ev.Tags.All("role")) > 0
		if kind == nostr.KindRemoveCommunityMember && named || kind == nostr.KindChangeCommunityRole && !named && len(ev.Tags.All("p")[0]) < 3 {
			t.Fatalf("kind %d parsed with tags %v", kind, tags)
		}
	})
}
