package embedded

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	msqlite "modernc.org/sqlite"

	"github.com/buzzrelay/buzz/search"
)

// events_fts holds no postings shared by two communities: every word is
// indexed as a token of its community, the community's number in decimal,
// the letter x, then the word as package search's tokenizer yields it
// (lowercased runs of letters and numbers), and a search asks for the
// tokens of its own community alone. FTS5 therefore reads only the
// searching community's postings, and what other communities write does
// not change what a search reads, how long it takes, or what it finds.
//
// The number is the community's seq in SQLite (communities.seq) when the
// events are in SQLite, and its number in the LSM engine (lsm.Text's
// Community) when they are in the engine; a store is one or the other for
// its whole life. A number is a run of digits ended by the x, so no token
// of one community is a token of another.
//
// The table's tokenizer is FTS5's ascii: its separators are ASCII
// characters other than letters and digits, so each token written here,
// and each word of a query, is exactly one FTS5 token (non-ASCII letters
// included, whatever Unicode version FTS5's tables know), folded by
// package search alone.

// ftsTextFunc is the SQL name of ftsText, for the statements that index
// the text of events stored in SQLite: buzz_fts_text(community, content).
const ftsTextFunc = "buzz_fts_text"

func init() {
	msqlite.MustRegisterDeterministicScalarFunction(ftsTextFunc, 2, func(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		cseq, ok := args[0].(int64)
		if !ok {
			return nil, fmt.Errorf("%s: community %T is not an integer", ftsTextFunc, args[0])
		}
		switch v := args[1].(type) {
		case nil:
			return "", nil
		case string:
			return ftsText(cseq, v), nil
		case []byte:
			return ftsText(cseq, string(v)), nil
		default:
			return "", nil // a content that is not text has no words
		}
	})
}

// appendFTSToken appends the token of word w in community cseq.
func appendFTSToken(b []byte, cseq int64, w string) []byte {
	return append(appendFTSPrefix(b, cseq), w...)
}

// appendFTSPrefix appends what precedes every word of community cseq in
// its tokens.
func appendFTSPrefix(b []byte, cseq int64) []byte {
	return append(strconv.AppendInt(b, cseq, 10), 'x')
}

// ftsText is content as events_fts indexes it for community cseq: its
// words, each as a token of the community, separated by spaces.
func ftsText(cseq int64, content string) string {
	var num [24]byte
	prefix := appendFTSPrefix(num[:0], cseq)
	var b strings.Builder
	words := false
	for w := range search.Words(content) {
		if !words {
			// About a word in five bytes of content, each with its
			// prefix and a space: one buffer for most contents.
			b.Grow(len(content) + (len(content)/5+1)*(len(prefix)+1))
			words = true
		} else {
			b.WriteByte(' ')
		}
		b.Write(prefix)
		b.WriteString(w)
	}
	return b.String()
}

// ftsMatch is q as an FTS5 query of community cseq's tokens: each word or
// phrase double-quoted (words hold only letters and numbers, so nothing
// needs escaping), implicitly ANDed.
func ftsMatch(cseq int64, q *search.Query) string {
	var b []byte
	for i, p := range q.Phrases() {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, '"')
		for j, w := range p {
			if j > 0 {
				b = append(b, ' ')
			}
			b = appendFTSToken(b, cseq, w)
		}
		b = append(b, '"')
	}
	return string(b)
}
