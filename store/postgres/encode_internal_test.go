package postgres

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestTagKeyInSQL holds the schema's buzz_tag_key (migration 170: the tag
// rows DeleteExpired and the deletion trigger remove) to tagKey (the rows
// the writer inserts and filters look up). The SQL side reads values from
// the event's tags copy, which went through sqlText.
func TestTagKeyInSQL(t *testing.T) {
	s := internalStore(t)
	values := []string{
		"", "go", "Go", "naïve café", "日本語", "emoji 🐝",
		strings.Repeat("ab", 32),                  // 64 lowercase hex: 0xfe || 32 bytes
		strings.Repeat("AB", 32),                  // uppercase hex: verbatim
		strings.Repeat("ab", 31) + "zz",           // 64 characters, not hex
		strings.Repeat("ab", 33),                  // 66 hex characters: verbatim
		strings.Repeat("x", maxTagValueBytes),     // longest verbatim
		strings.Repeat("x", maxTagValueBytes+1),   // hashed
		strings.Repeat("é", maxTagValueBytes/2+1), // 258 bytes, 129 characters: hashed
		"nul\x00inside", "bad utf-8 \xff\xfe",
	}
	for _, v := range values {
		var got []byte
		if err := s.pool.QueryRow(context.Background(), `SELECT buzz_tag_key($1)`, sqlText(v)).Scan(&got); err != nil {
			t.Fatalf("buzz_tag_key(%q): %v", v, err)
		}
		if want := tagKey(v); !bytes.Equal(got, want) {
			t.Errorf("buzz_tag_key(%q) = %x, tagKey = %x", v, got, want)
		}
	}
}
