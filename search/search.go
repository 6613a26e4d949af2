// Package search is buzz's NIP-50 full-text search: the tokenizer every
// backend indexes content with, the query language a filter's "search"
// field is parsed by, and the matcher and score live subscriptions and the
// embedded store use.
//
// # Tokens
//
// Text is split into words at every rune that is not a letter or a number
// (Unicode categories L and N): spaces, punctuation, symbols, emoji and
// combining marks all separate words, so "example.com", "don't" and
// "foo_bar" are two words each. Words are lowercased rune by rune
// (unicode.ToLower). There is no stemming and no stop-word list: the
// language-neutral behaviour of PostgreSQL's 'simple' configuration, so
// every language is searchable as written ("running" does not match "run",
// "café" does not match "cafe"). Scripts written without spaces (Chinese,
// Japanese, Thai) form one word per run of letters, as in PostgreSQL's and
// SQLite's tokenizers.
//
// # Queries
//
// A query is a list of words and "quoted phrases", tokenized as above; an
// event matches when its content contains every word, and every phrase as
// consecutive words (AND; there is no OR, NOT or prefix matching). An
// unquoted word that the tokenizer splits ("example.com", "don't") is the
// phrase of its parts. The
// NIP-50 extensions include:, domain:, language:, sentiment: and nsfw: are
// recognized as whitespace-separated key:value words and ignored; any other
// "a:b" is the two words a and b. A query must hold at least one word, at
// most MaxWords words in all and MaxQueryBytes bytes.
//
// # Relevance
//
// Score ranks matching content by how often the query occurs, with
// diminishing returns: each word or phrase adds 1 + 1/4 + 1/9 + … over its
// occurrences. It uses nothing but the event itself (no statistics of other
// events, which would let one community's content move another's ranking).
//
// # Dependencies
//
// Package search builds on package nostr alone of buzz: nostr carries a
// filter's "search" as a string and does not import search; FromFilter,
// Matches and Matcher apply it to nostr filters and events (the gift-wrap
// rule "never searchable" is nostr.IsSearchable).
package search

import (
	"errors"
	"iter"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Query limits.
const (
	// MaxQueryBytes is the longest search string accepted.
	MaxQueryBytes = 1024
	// MaxWords is the most words a query may hold, phrases included.
	MaxWords = 16
)

// ignoredExtensions are the NIP-50 key:value extensions buzz accepts and
// does not apply.
var ignoredExtensions = [...]string{"include", "domain", "language", "sentiment", "nsfw"}

// Query is a parsed search query. It is immutable and safe for concurrent
// use.
type Query struct {
	// phrases holds each distinct word or phrase, as lowercased words; a
	// word is a phrase of one.
	phrases [][]string
}

// Parse parses a NIP-50 search string. Errors start with "invalid: ".
func Parse(s string) (*Query, error) {
	if len(s) > MaxQueryBytes {
		return nil, errors.New("invalid: search query longer than " + strconv.Itoa(MaxQueryBytes) + " bytes")
	}
	q := &Query{}
	words := 0
	add := func(text string) {
		var p []string
		for w := range Words(text) {
			p = append(p, w)
		}
		if len(p) == 0 {
			return
		}
		for _, old := range q.phrases {
			if equal(old, p) {
				return
			}
		}
		words += len(p)
		q.phrases = append(q.phrases, p)
	}
	rest := s
	for rest != "" {
		i := strings.IndexByte(rest, '"')
		if i < 0 {
			addPlain(rest, add)
			break
		}
		addPlain(rest[:i], add)
		rest = rest[i+1:]
		j := strings.IndexByte(rest, '"')
		if j < 0 { // an unterminated phrase runs to the end
			j = len(rest)
		}
		add(rest[:j])
		rest = rest[min(j+1, len(rest)):]
	}
	if words == 0 {
		return nil, errors.New("invalid: search query has no words to match")
	}
	if words > MaxWords {
		return nil, errors.New("invalid: search query has more than " + strconv.Itoa(MaxWords) + " words")
	}
	return q, nil
}

// addPlain feeds the unquoted text s to add, dropping ignored extensions.
func addPlain(s string, add func(string)) {
	for _, f := range strings.Fields(s) {
		if k, _, ok := strings.Cut(f, ":"); ok && isIgnoredExtension(k) {
			continue
		}
		add(f)
	}
}

func isIgnoredExtension(k string) bool {
	for _, x := range ignoredExtensions {
		if strings.EqualFold(k, x) {
			return true
		}
	}
	return false
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Phrases returns the query's distinct words and phrases, each as its
// lowercased words in order (a word is a phrase of one). The caller must
// not modify them.
func (q *Query) Phrases() [][]string { return q.phrases }

// String returns the query in canonical form: its phrases, quoted when
// longer than one word, separated by spaces. Parse(q.String()) is q.
func (q *Query) String() string {
	var b strings.Builder
	for i, p := range q.phrases {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(p) > 1 {
			b.WriteByte('"')
		}
		b.WriteString(strings.Join(p, " "))
		if len(p) > 1 {
			b.WriteByte('"')
		}
	}
	return b.String()
}

// Match reports whether text contains every word and phrase of q.
func (q *Query) Match(text string) bool {
	var buf [MaxWords]int
	counts := buf[:len(q.phrases)]
	q.count(text, counts, true)
	for _, n := range counts {
		if n == 0 {
			return false
		}
	}
	return true
}

// Score returns the relevance of text for q: 0 when text does not match,
// else the sum over q's phrases of 1 + 1/4 + … + 1/n² for n occurrences.
// Higher is more relevant.
func (q *Query) Score(text string) float64 {
	var buf [MaxWords]int
	counts := buf[:len(q.phrases)]
	q.count(text, counts, false)
	score := 0.0
	for _, n := range counts {
		if n == 0 {
			return 0
		}
		for j := 1; j <= n; j++ {
			score += 1 / float64(j*j)
		}
	}
	return score
}

// count adds to counts[i] the occurrences of phrase i in text. With
// presence set it stops once every phrase was seen.
//
// Each phrase is matched with the shift-and algorithm: bit j of state[i]
// is set when the last j+1 words equal the phrase's first j+1 words.
func (q *Query) count(text string, counts []int, presence bool) {
	var buf [MaxWords]uint32
	state := buf[:len(q.phrases)]
	missing := len(q.phrases)
	for w := range Words(text) {
		for i, p := range q.phrases {
			var hit uint32
			for j, pw := range p {
				if pw == w {
					hit |= 1 << j
				}
			}
			state[i] = (state[i]<<1 | 1) & hit
			if state[i]&(1<<(len(p)-1)) != 0 {
				if counts[i] == 0 {
					missing--
				}
				counts[i]++
			}
		}
		if presence && missing == 0 {
			return
		}
	}
}

// Words yields the lowercased words of text, in order.
func Words(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := -1    // byte offset of the current word, -1 between words
		upper := false // the current word needs lowercasing
		for i := 0; i < len(text); {
			c := text[i]
			size := 1
			word, up := false, false
			if c < utf8.RuneSelf {
				word = 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
				if 'A' <= c && c <= 'Z' {
					word, up = true, true
				}
			} else {
				var r rune
				r, size = utf8.DecodeRuneInString(text[i:])
				word = isWordRune(r)
				up = word && unicode.ToLower(r) != r
			}
			switch {
			case word && start < 0:
				start, upper = i, up
			case word:
				upper = upper || up
			case start >= 0:
				if !yieldWord(yield, text[start:i], upper) {
					return
				}
				start = -1
			}
			i += size
		}
		if start >= 0 {
			yieldWord(yield, text[start:], upper)
		}
	}
}

func yieldWord(yield func(string) bool, w string, upper bool) bool {
	if upper {
		w = strings.ToLower(w)
	}
	return yield(w)
}

// isWordRune reports whether r belongs to a word: a letter or a number.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsNumber(r))
}
