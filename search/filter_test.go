package search

import (
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
)

func TestFromFilter(t *testing.T) {
	f, err := nostr.ParseFilter([]byte(`{"kinds":[1,1059],"search":"Hello \"big world\" include:spam"}`))
	if err != nil {
		t.Fatal(err)
	}
	if q, err := FromFilter(&f); err != nil || q.String() != `hello "big world"` {
		t.Fatalf("FromFilter = %v, %v", q, err)
	}
	if q, err := FromFilter(&nostr.Filter{Kinds: []int{1}}); q != nil || err != nil {
		t.Fatalf("FromFilter(no search) = %v, %v", q, err)
	}
}

// TestCheckFilters: a search that does not parse is refused with Parse's
// text, whichever filter holds it; the empty string, which package nostr
// refuses while parsing (a present search cannot be ""), with the same
// text as an empty query here.
func TestCheckFilters(t *testing.T) {
	ok := []nostr.Filter{{Kinds: []int{1}}, {Search: "espresso"}}
	if err := CheckFilters(ok); err != nil {
		t.Fatalf("CheckFilters(good) = %v", err)
	}
	for _, s := range []string{"  ", "!!!", "include:spam", strings.Repeat("a ", MaxQueryBytes)} {
		_, want := Parse(s)
		err := CheckFilters(append(ok, nostr.Filter{Search: s}))
		if err == nil || want == nil || err.Error() != want.Error() || !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Errorf("CheckFilters(%q) = %v, want %v", s, err, want)
		}
	}
	_, empty := Parse("")
	_, wire := nostr.ParseFilter([]byte(`{"search":""}`))
	if empty == nil || wire == nil || empty.Error() != wire.Error() {
		t.Fatalf("an empty search: nostr says %v, search says %v", wire, empty)
	}
}

func TestMatches(t *testing.T) {
	f := nostr.Filter{Kinds: []int{1, 1059}, Search: `Hello "big world" include:spam`}
	m := NewMatcher(&f)
	if m.Filter() != &f || m.Query() == nil {
		t.Fatalf("Matcher holds %p, %v", m.Filter(), m.Query())
	}
	for _, tc := range []struct {
		kind    int
		content string
		want    bool
	}{
		{1, "HELLO, the big world!", true},
		{1, "hello world big", false},
		{1, "big world", false},
		{1059, "hello big world", false}, // gift wraps never match a search
		{7, "hello big world", false},    // not in Kinds
	} {
		e := &nostr.Event{Kind: tc.kind, Content: tc.content}
		if got := Matches(&f, e); got != tc.want {
			t.Errorf("kind %d %q: Matches = %v, want %v", tc.kind, tc.content, got, tc.want)
		}
		if got := m.Matches(e); got != tc.want {
			t.Errorf("kind %d %q: Matcher.Matches = %v, want %v", tc.kind, tc.content, got, tc.want)
		}
	}
	bad := nostr.Filter{Search: "!!!"}
	e := &nostr.Event{Kind: 1, Content: "!!!"}
	if Matches(&bad, e) || NewMatcher(&bad).Matches(e) || NewMatcher(&bad).Query() != nil {
		t.Error("an invalid query matched")
	}
	plain := nostr.Filter{Kinds: []int{1}}
	if !Matches(&plain, e) || !NewMatcher(&plain).Matches(e) {
		t.Error("a filter without a search refused a matching event")
	}
}
