package apitoken_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/nostr"
)

func TestGenerate(t *testing.T) {
	a, ha := apitoken.Generate()
	b, _ := apitoken.Generate()
	if a == b || !apitoken.WellFormed(a) || !strings.HasPrefix(a, "buzz_") || len(a) != 69 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if ha != apitoken.Hash(a) {
		t.Fatal("Generate's hash is not Hash of the token")
	}
}

func TestFromAuthorization(t *testing.T) {
	tok, _ := apitoken.Generate()
	for _, tc := range []struct {
		header string
		token  string
		bearer bool
	}{
		{"Bearer " + tok, tok, true},
		{"bearer  " + tok + " ", tok, true},
		{"Bearer " + strings.ToUpper(tok), "", true},
		{"Bearer sprout_" + strings.Repeat("a", 64), "", true},
		{"Bearer " + tok[:len(tok)-1], "", true},
		{"Bearer", "", false},
		{"Nostr eyJraW5kIjoyNzIzNX0=", "", false},
		{"", "", false},
	} {
		token, bearer := apitoken.FromAuthorization(tc.header)
		if token != tc.token || bearer != tc.bearer {
			t.Errorf("%q: got %q %v", tc.header, token, bearer)
		}
	}
}

func TestParseScopes(t *testing.T) {
	got, err := apitoken.ParseScopes("messages:write, messages:read", "messages:read")
	if err != nil || !slices.Equal(got, []apitoken.Scope{apitoken.MessagesRead, apitoken.MessagesWrite}) {
		t.Fatalf("got %v %v", got, err)
	}
	if all, err := apitoken.ParseScopes(apitoken.Strings(apitoken.All())...); err != nil || len(all) != 16 {
		t.Fatalf("all scopes: %d %v", len(all), err)
	}
	for _, bad := range [][]string{nil, {""}, {"messages:read,"}, {"root"}, {"Messages:Read"}, {"messages:read", "proxy:submit"}} {
		if _, err := apitoken.ParseScopes(bad...); err == nil || !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestScopeForEvent(t *testing.T) {
	for _, tc := range []struct {
		kind int
		tags nostr.Tags
		want apitoken.Scope
	}{
		{nostr.KindChatMessage, nil, apitoken.MessagesWrite},
		{7, nil, apitoken.MessagesWrite},
		{nostr.KindDeletion, nil, apitoken.MessagesWrite},
		{nostr.KindGiftWrap, nil, apitoken.MessagesWrite},
		{nostr.KindProfile, nil, apitoken.UsersWrite},
		{nostr.KindContacts, nil, apitoken.UsersWrite},
		{nostr.KindCreateChannel, nil, apitoken.ChannelsWrite},
		{nostr.KindEditMetadata, nil, apitoken.ChannelsWrite},
		{nostr.KindEditMetadata, nostr.Tags{{"archived"}}, apitoken.AdminChannels},
		{nostr.KindPutUser, nil, apitoken.AdminChannels},
		{nostr.KindJoinRequest, nil, apitoken.ChannelsRead},
		{nostr.KindBan, nil, apitoken.AdminUsers},
		{nostr.KindDefinition, nil, apitoken.JobsWrite},
		{nostr.KindRepository, nil, apitoken.ReposWrite},
	} {
		if got := apitoken.ScopeForEvent(&nostr.Event{Kind: tc.kind, Tags: tc.tags}); got != tc.want {
			t.Errorf("kind %d %v: %s, want %s", tc.kind, tc.tags, got, tc.want)
		}
	}
}

// FuzzFromAuthorization: whatever the header, a token returned is well
// formed and appears in the header; a non-Bearer header yields none.
func FuzzFromAuthorization(f *testing.F) {
	tok, _ := apitoken.Generate()
	for _, s := range []string{"Bearer " + tok, "Nostr abc", "Bearer ", "bearer buzz_", "", "Bearer  buzz_" + strings.Repeat("0", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, bearer := apitoken.FromAuthorization(header)
		if token != "" && (!bearer || !apitoken.WellFormed(token) || !strings.Contains(header, token)) {
			t.Fatalf("%q gave %q %v", header, token, bearer)
		}
		if bearer && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(header)), "bearer ") {
			t.Fatalf("%q taken for Bearer", header)
		}
	})
}

// FuzzParseScopes: a parse either fails with an invalid: message or gives
// a sorted set of known scopes without repeats, each named in the input.
func FuzzParseScopes(f *testing.F) {
	for _, s := range []string{"messages:read", "messages:read,messages:write", " users:write ,", "root", "", strings.Join(apitoken.Strings(apitoken.All()), ",")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := apitoken.ParseScopes(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("%q: %v", in, err)
			}
			return
		}
		if len(got) == 0 || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("%q: %v", in, got)
		}
		for _, s := range got {
			if !s.Valid() || !strings.Contains(in, string(s)) {
				t.Fatalf("%q: %v", in, got)
			}
		}
	})
}
