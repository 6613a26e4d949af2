package search

import (
	"slices"
	"strings"
	"testing"
)

func words(s string) []string { return slices.Collect(Words(s)) }

func TestWords(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"example.com don't foo_bar a-b", []string{"example", "com", "don", "t", "foo", "bar", "a", "b"}},
		{"v1.2 3.14 abc123", []string{"v1", "2", "3", "14", "abc123"}},
		{"Ünïcode CAFÉ café", []string{"ünïcode", "café", "café"}},
		{"日本語のテキスト 🙂 Ελληνικά", []string{"日本語のテキスト", "ελληνικά"}},
		{"tab\tnew\nline\u00a0nbsp", []string{"tab", "new", "line", "nbsp"}},
		{"bad\xffutf8", []string{"bad", "utf8"}},
	}
	for _, c := range cases {
		if got := words(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		in, canon, err string
	}{
		{in: "Nostr relay", canon: "nostr relay"},
		{in: `"hello world" buzz`, canon: `"hello world" buzz`},
		{in: `buzz "Buzz" "a"`, canon: `buzz a`},
		{in: `"unterminated phrase here`, canon: `"unterminated phrase here"`},
		{in: "coffee include:spam language:en domain:x.com sentiment:pos nsfw:false", canon: "coffee"},
		{in: "bitcoin:rocks example.com", canon: `"bitcoin rocks" "example com"`},
		{in: "Include:spam relay", canon: "relay"},
		{in: "", err: "invalid: search query has no words to match"},
		{in: "!!! ...", err: "invalid: search query has no words to match"},
		{in: "include:spam", err: "invalid: search query has no words to match"},
		{in: strings.Repeat("w ", 17), canon: "w"},
		{in: "a b c d e f g h i j k l m n o p q", err: "invalid: search query has more than 16 words"},
		{in: strings.Repeat("x", MaxQueryBytes+1), err: "invalid: search query longer than 1024 bytes"},
	}
	for _, c := range cases {
		q, err := Parse(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("Parse(%.40q) error = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%.40q): %v", c.in, err)
			continue
		}
		if got := q.String(); got != c.canon {
			t.Errorf("Parse(%.40q).String() = %q, want %q", c.in, got, c.canon)
		}
	}
}

func mustParse(t testing.TB, s string) *Query {
	t.Helper()
	q, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestMatchAndScore(t *testing.T) {
	cases := []struct {
		query, text string
		match       bool
		score       float64
	}{
		{"relay", "A Nostr RELAY.", true, 1},
		{"relay", "relays", false, 0},
		{"relay nostr", "nostr relay relay", true, 1 + 1 + 0.25},
		{"relay nostr", "nostr only", false, 0},
		{`"hello world"`, "say hello, world!", true, 1},
		{`"hello world"`, "world hello", false, 0},
		{`"a a b"`, "a a a b", true, 1},
		{`"a b"`, "a b x a b a b", true, 1 + 0.25 + 1.0/9},
		{"café", "CAFÉ au lait", true, 1},
		{"cafe", "café", false, 0},
		{"example", "see https://example.com/path", true, 1},
	}
	for _, c := range cases {
		q := mustParse(t, c.query)
		if got := q.Match(c.text); got != c.match {
			t.Errorf("%q.Match(%q) = %v, want %v", c.query, c.text, got, c.match)
		}
		if got := q.Score(c.text); got != c.score {
			t.Errorf("%q.Score(%q) = %v, want %v", c.query, c.text, got, c.score)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	q := mustParse(b, `relay "group commit"`)
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 6) + "relay group commit"
	b.ReportAllocs()
	for b.Loop() {
		if !q.Match(text) {
			b.Fatal("no match")
		}
	}
}
