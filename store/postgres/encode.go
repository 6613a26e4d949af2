package postgres

import (
	"crypto/sha256"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// maxTagValueBytes is the longest tag value event_tags stores verbatim;
// longer values are stored (and looked up) as 0xff || sha256(value).
const maxTagValueBytes = 256

// sqlText returns s as PostgreSQL text accepts it: valid UTF-8 without NUL.
// The copies of content and tags kept for SQL use go through it; raw keeps
// the exact bytes.
func sqlText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "")
}

// tagKey is the event_tags.value for a tag value: 0xfe || the 32 bytes of a
// 64-character lowercase hex value (event ids and pubkeys, most of the
// table), 0xff || sha256(value) for a value longer than maxTagValueBytes,
// and the UTF-8 bytes otherwise (neither 0xfe nor 0xff occurs in UTF-8).
// Writes and filters both use it, so a filter value matches exactly the
// values that are equal after sqlText. The schema's buzz_tag_key
// (migration 170) repeats it in SQL for the rows DeleteExpired and the
// deletion trigger remove; TestTagKeyInSQL holds the two together.
func tagKey(v string) []byte {
	v = sqlText(v)
	if b, ok := nostr.DecodeHex32(v); ok {
		return append([]byte{0xfe}, b...)
	}
	if len(v) <= maxTagValueBytes {
		return []byte(v)
	}
	sum := sha256.Sum256([]byte(v))
	return append([]byte{0xff}, sum[:]...)
}

// isIndexedTagName reports whether tags of this name go into event_tags:
// the single-letter names NIP-01 filters can address.
func isIndexedTagName(n string) bool {
	return len(n) == 1 && (n[0] >= 'a' && n[0] <= 'z' || n[0] >= 'A' && n[0] <= 'Z')
}

// decodeHexN decodes exactly 2*n lowercase hex characters.
func decodeHexN(s string, n int) ([]byte, bool) {
	b := make([]byte, n)
	if !nostr.DecodeLowerHex(b, s) {
		return nil, false
	}
	return b, true
}

// tagsJSON is the jsonb copy of an event's tags.
func tagsJSON(tags [][]string) string {
	clean := make([][]string, len(tags))
	for i, t := range tags {
		c := make([]string, len(t))
		for j, v := range t {
			c[j] = sqlText(v)
		}
		clean[i] = c
	}
	b, _ := json.Marshal(clean) // [][]string always marshals
	return string(b)
}

// coordinateLock is the advisory-lock key serializing writes to one
// replaceable/addressable coordinate of one community (FNV-1a 64).
func coordinateLock(c tenant.CommunityID, kind int, pubkey, d string) int64 {
	h := fnv.New64a()
	u := c.UUID()
	h.Write(u[:])
	h.Write([]byte(strconv.Itoa(kind)))
	h.Write([]byte{0})
	h.Write([]byte(pubkey))
	h.Write([]byte{0})
	h.Write([]byte(d))
	return int64(h.Sum64())
}
