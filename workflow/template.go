package workflow

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/buzzrelay/buzz/nostr"
)

// maxExpansion bounds the length of one expanded field.
const maxExpansion = 256 << 10

// Expand substitutes the placeholders of tmpl from vars, in one pass.
//
// A placeholder is {{path}} or {{path | filter | …}} where path is
// trigger.NAME or steps.ID.output.FIELD (deeper fields with more dots) and
// the filters are truncate(N), npub, truncate_pubkey and json. A
// placeholder whose path is not set, or that does not parse, is left as
// written. Substituted text is never scanned again, so a value containing
// "{{…}}" (a user's message) comes out literally.
func Expand(tmpl string, vars map[string]any) string {
	if !strings.Contains(tmpl, "{{") {
		return tmpl
	}
	var b strings.Builder
	rest := tmpl
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			b.WriteString(rest[i:])
			break
		}
		inner := rest[i+2 : i+2+j]
		if v, ok := expandOne(inner, vars); ok {
			b.WriteString(v)
		} else {
			b.WriteString(rest[i : i+2+j+2])
		}
		rest = rest[i+2+j+2:]
		if b.Len() > maxExpansion {
			break
		}
	}
	out := b.String()
	if len(out) > maxExpansion {
		out = truncateRunes(out[:maxExpansion], maxExpansion)
	}
	return out
}

func expandOne(inner string, vars map[string]any) (string, bool) {
	parts := strings.Split(inner, "|")
	path := strings.TrimSpace(parts[0])
	v, ok := lookupPath(vars, path)
	if !ok {
		return "", false
	}
	s, isString := v.(string)
	if !isString {
		s = toJSON(v)
	}
	for _, f := range parts[1:] {
		f = strings.TrimSpace(f)
		switch {
		case f == "json":
			s = toJSON(s)
			if !isString {
				s = toJSON(v)
			}
			isString = true // further filters see the JSON text
		case f == "npub":
			n, ok := npub(s)
			if !ok {
				return "", false
			}
			s = n
		case f == "truncate_pubkey":
			if n, ok := npub(s); ok {
				s = n
			}
			if utf8.RuneCountInString(s) > 16 {
				s = s[:12] + "…" + s[len(s)-4:]
			}
		case strings.HasPrefix(f, "truncate(") && strings.HasSuffix(f, ")"):
			n, err := strconv.Atoi(strings.TrimSpace(f[len("truncate(") : len(f)-1]))
			if err != nil || n < 0 {
				return "", false
			}
			s = truncateRunes(s, n)
		default:
			return "", false
		}
	}
	return s, true
}

func lookupPath(vars map[string]any, path string) (any, bool) {
	segs := strings.Split(path, ".")
	if len(segs) < 2 {
		return nil, false
	}
	switch segs[0] {
	case "trigger":
	case "steps":
		if len(segs) < 4 || segs[2] != "output" {
			return nil, false
		}
	default:
		return nil, false
	}
	var cur any = vars
	for _, s := range segs {
		m, ok := cur.(map[string]any)
		if !ok || s == "" {
			return nil, false
		}
		cur, ok = m[s]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

func toJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// truncateRunes keeps the first n characters of s, marking a cut with "…".
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k] + "…"
		}
		i++
	}
	return s
}

// npub encodes a 64-hex public key as NIP-19 "npub1…".
func npub(hexKey string) (string, bool) {
	if !nostr.IsLowerHex(hexKey, 64) {
		return "", false
	}
	n, err := nostr.EncodeNpub(hexKey)
	return n, err == nil
}
