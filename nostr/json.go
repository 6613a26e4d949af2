package nostr

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// This file holds the small strict JSON scanner shared by the event, filter
// and envelope decoders, and the NIP-01 string escaper shared by every writer.
//
// The scanner works on a string: the decoders convert their input once, so
// every unescaped string value in the result is a substring of that one copy
// (one allocation for all ids, keys, tag values and content).
//
// Strictness beyond RFC 8259, on purpose:
//   - strings must be valid UTF-8 and may not contain lone surrogate escapes
//     (\ud800 without its pair): encoding/json would silently replace those
//     with U+FFFD, which changes the bytes an event id is computed over;
//   - nesting deeper than maxDepth is refused.

// maxDepth bounds the nesting of arrays and objects the scanner accepts
// inside values it skips (unknown event fields and the like).
const maxDepth = 512

// errSyntax is the generic "this is not the JSON we expect" failure.
var errSyntax = errors.New("invalid: malformed JSON")

// strError describes why a JSON string was refused; the caller names the
// field it was reading.
type strError uint8

const (
	strOK strError = iota
	strNotString
	strUnterminated
	strControl
	strBadEscape
	strLoneSurrogate
	strBadUTF8
)

func (e strError) reason() string {
	switch e {
	case strNotString:
		return "must be a string"
	case strUnterminated:
		return "is an unterminated string"
	case strControl:
		return "contains an unescaped control character"
	case strBadEscape:
		return "contains an invalid escape sequence"
	case strLoneSurrogate:
		return "contains a lone UTF-16 surrogate escape"
	case strBadUTF8:
		return "contains invalid UTF-8"
	}
	return "is malformed"
}

// scanner is a cursor over JSON text.
type scanner struct {
	s string
	i int
	// maxValues, when positive, bounds the values of one filter field.
	maxValues int
}

// ws skips JSON whitespace.
func (p *scanner) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace, or 0 at the end of input.
func (p *scanner) peek() byte {
	p.ws()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// consume skips whitespace and then c, reporting whether c was there.
func (p *scanner) consume(c byte) bool {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// atEnd reports whether only whitespace remains.
func (p *scanner) atEnd() bool {
	p.ws()
	return p.i == len(p.s)
}

// readString reads a JSON string value at the cursor (after whitespace) and
// returns its decoded content. Strings without escapes are returned as
// substrings of the input, without copying.
func (p *scanner) readString() (string, strError) {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", strNotString
	}
	start := p.i + 1
	i := start
	s := p.s
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return s[start:i], strOK
		case c == '\\':
			return p.readEscapedString(start, i)
		case c < 0x20:
			return "", strControl
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", strBadUTF8
			}
			i += size
		}
	}
	return "", strUnterminated
}

// readEscapedString finishes reading a string whose first escape sits at
// esc; start is the first content byte.
func (p *scanner) readEscapedString(start, esc int) (string, strError) {
	s := p.s
	// Every escape is longer than what it decodes to, so the decoded
	// string fits in the length of its JSON form: one buffer, sized by a
	// first look for the closing quote, which the string then shares.
	end := esc
	for end < len(s) && s[end] != '"' {
		if s[end] == '\\' {
			end++
		}
		end++
	}
	buf := make([]byte, 0, min(end, len(s))-start)
	buf = append(buf, s[start:esc]...)
	i := esc
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return unsafe.String(unsafe.SliceData(buf), len(buf)), strOK // buf is not written again
		case c == '\\':
			if i+1 >= len(s) {
				return "", strUnterminated
			}
			switch s[i+1] {
			case '"':
				buf = append(buf, '"')
			case '\\':
				buf = append(buf, '\\')
			case '/':
				buf = append(buf, '/')
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(s, i+2)
				if !ok {
					return "", strBadEscape
				}
				i += 6
				if r >= 0xd800 && r < 0xe000 {
					if r >= 0xdc00 {
						return "", strLoneSurrogate
					}
					if i+1 >= len(s) || s[i] != '\\' || s[i+1] != 'u' {
						return "", strLoneSurrogate
					}
					lo, ok := hex4(s, i+2)
					if !ok {
						return "", strBadEscape
					}
					if lo < 0xdc00 || lo >= 0xe000 {
						return "", strLoneSurrogate
					}
					i += 6
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				}
				buf = utf8.AppendRune(buf, r)
				continue
			default:
				return "", strBadEscape
			}
			i += 2
		case c < 0x20:
			return "", strControl
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", strBadUTF8
			}
			buf = append(buf, s[i:i+size]...)
			i += size
		}
	}
	return "", strUnterminated
}

// hex4 decodes the four hex digits at s[i:i+4].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// numError describes why a JSON number was refused as a non-negative integer.
type numError uint8

const (
	numOK numError = iota
	numNotNumber
	numNegative
	numNotInteger
	numOverflow
)

// readUint reads a JSON number that must be a non-negative integer without
// fraction or exponent, at most max. On numOverflow the cursor is still
// moved past the digits, so callers that saturate can carry on.
func (p *scanner) readUint(max uint64) (uint64, numError) {
	p.ws()
	s := p.s
	i := p.i
	if i >= len(s) {
		return 0, numNotNumber
	}
	if s[i] == '-' {
		if i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
			return 0, numNegative
		}
		return 0, numNotNumber
	}
	if s[i] < '0' || s[i] > '9' {
		return 0, numNotNumber
	}
	if s[i] == '0' {
		i++
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			return 0, numNotNumber // leading zero: not JSON
		}
		if i < len(s) && (s[i] == '.' || s[i] == 'e' || s[i] == 'E') {
			return 0, numNotInteger
		}
		p.i = i
		return 0, numOK
	}
	var v uint64
	overflow := false
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		d := uint64(s[i] - '0')
		if v > (max-d)/10 {
			overflow = true
		} else {
			v = v*10 + d
		}
		i++
	}
	if i < len(s) && (s[i] == '.' || s[i] == 'e' || s[i] == 'E') {
		return 0, numNotInteger
	}
	p.i = i
	if overflow {
		return max, numOverflow
	}
	return v, numOK
}

// skipValue validates and skips any JSON value at the cursor.
func (p *scanner) skipValue(depth int) error {
	if depth > maxDepth {
		return errors.New("invalid: JSON nested too deeply")
	}
	switch p.peek() {
	case '"':
		if _, e := p.skipString(); e != strOK {
			return errSyntax
		}
		return nil
	case '{':
		p.i++
		if p.consume('}') {
			return nil
		}
		for {
			if _, e := p.skipString(); e != strOK {
				return errSyntax
			}
			if !p.consume(':') {
				return errSyntax
			}
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			if p.consume(',') {
				continue
			}
			if p.consume('}') {
				return nil
			}
			return errSyntax
		}
	case '[':
		p.i++
		if p.consume(']') {
			return nil
		}
		for {
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			if p.consume(',') {
				continue
			}
			if p.consume(']') {
				return nil
			}
			return errSyntax
		}
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	default:
		return p.skipNumber()
	}
}

// skipString validates a string without building its value (escapes are
// checked exactly as readString does).
func (p *scanner) skipString() (int, strError) {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return 0, strNotString
	}
	start := p.i
	for i := p.i + 1; i < len(p.s); i++ {
		c := p.s[i]
		if c == '"' {
			p.i = i + 1
			return start, strOK
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			p.i = start
			_, e := p.readString()
			return start, e
		}
	}
	return 0, strUnterminated
}

func (p *scanner) literal(lit string) error {
	if len(p.s)-p.i >= len(lit) && p.s[p.i:p.i+len(lit)] == lit {
		p.i += len(lit)
		return nil
	}
	return errSyntax
}

// skipNumber validates any JSON number.
func (p *scanner) skipNumber() error {
	s := p.s
	i := p.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return errSyntax
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return errSyntax
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return errSyntax
		}
	}
	p.i = i
	return nil
}

// IsLowerHex reports whether s is exactly n lowercase hex characters, the
// form NIP-01 requires of ids (64), public keys (64) and signatures (128).
func IsLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// DecodeLowerHex decodes lowercase hex s into dst, reporting false (dst
// then holds no meaningful value) unless s is exactly 2*len(dst) lowercase
// hex characters.
func DecodeLowerHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := lowerHexVal(s[2*i])
		lo, ok2 := lowerHexVal(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

// DecodeHex32 decodes exactly 64 lowercase hex characters (an event id or a
// public key) into a new 32-byte slice.
func DecodeHex32(s string) ([]byte, bool) {
	if len(s) != 64 {
		return nil, false
	}
	b := make([]byte, 32)
	if !DecodeLowerHex(b, s) {
		return nil, false
	}
	return b, true
}

func lowerHexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

const hexDigits = "0123456789abcdef"

// appendHex appends the lowercase hex encoding of b.
func appendHex(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0x0f])
	}
	return dst
}

// AppendString appends s as a JSON string escaped by the NIP-01 rules: '"'
// and '\\' are escaped, \b \t \n \f \r use their short escapes, the other
// control characters below 0x20 become \u00XX (lowercase hex), and every
// other byte, including non-ASCII UTF-8 and U+2028/U+2029, is copied
// verbatim. No HTML escaping is done. This is exactly the escaping of the
// id serialization, so it is safe for wire output too.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0x0f])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendInt appends a decimal integer.
func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

const maxInt64 = uint64(math.MaxInt64)
