package embedded

import (
	"math"
	"testing"

	"github.com/buzzrelay/buzz/search"
)

// TestFTSTextTokens: the indexed text of a content is its words, each as
// appendFTSToken writes the tokens a search asks for, separated by spaces,
// and nothing for a content without words.
func TestFTSTextTokens(t *testing.T) {
	contents := []string{
		"", "+", "🤙", "Hello, world!", "  spaced   out  ",
		"Ünïcödé wörds and ÉMOJI 😀 mixed with ascii_123 numbers 42",
		"a b c d e f g h i j k l m n o p q r s t u v w x y z",
		"nostr:npub1xyz https://example.com/path?q=1 #tag @name",
	}
	for _, cseq := range []int64{0, 1, 7, 12345, math.MaxInt64} {
		for _, content := range contents {
			var want []byte
			for w := range search.Words(content) {
				if len(want) > 0 {
					want = append(want, ' ')
				}
				want = appendFTSToken(want, cseq, w)
			}
			if got := ftsText(cseq, content); got != string(want) {
				t.Errorf("ftsText(%d, %q) = %q, want %q", cseq, content, got, want)
			}
		}
	}
}
