package search

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that Parse never panics, errors with "invalid: ", and
// that a parsed query survives its canonical form and matches that form's
// own words.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"nostr relay", `"hello world" buzz`, `"unterminated`, "include:spam x",
		"日本語 テスト", "a:b:c", `""`, "\xff\xfe", "İstanbul ǅ", strings.Repeat("a ", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		canon := q.String()
		q2, err := Parse(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, s, err)
		}
		if !slices.EqualFunc(q.Phrases(), q2.Phrases(), slices.Equal) {
			t.Fatalf("%q → %q → %q", s, canon, q2.String())
		}
		for _, p := range q.Phrases() {
			for _, w := range p {
				if w == "" || !utf8.ValidString(w) {
					t.Fatalf("bad word %q", w)
				}
			}
		}
		text := strings.ReplaceAll(canon, `"`, " ")
		if !q.Match(text) || q.Score(text) < float64(len(q.Phrases())) {
			t.Fatalf("%q does not match its own words %q", canon, text)
		}
	})
}
