package nostr

import (
	"crypto/sha256"
	"errors"
	"strings"
	"unsafe"
)

// Event fields as they appear on the wire, in NIP-01 order.
const (
	fieldID = 1 << iota
	fieldPubKey
	fieldCreatedAt
	fieldKind
	fieldTags
	fieldContent
	fieldSig
	fieldsAll = fieldID | fieldPubKey | fieldCreatedAt | fieldKind | fieldTags | fieldContent | fieldSig
)

// ParseEvent decodes one event object strictly.
//
// It accepts exactly the NIP-01 shape: "id" and "pubkey" are 64 lowercase
// hex characters, "sig" 128; "kind" is an integer 0..65535; "created_at" is
// a non-negative integer that fits in an int64 (no fraction, no exponent);
// "tags" is an array of arrays of strings (an empty tag [] is accepted, as
// NIP-01 does not forbid it and it hashes unambiguously); "content" is a
// string. All seven fields are required, none may appear twice, and unknown
// extra fields are validated as JSON and then ignored. Strings must be valid
// UTF-8 and may not hold a lone UTF-16 surrogate escape. Only whitespace may
// follow the object.
//
// Every error's text starts with "invalid: " and names the problem. The
// returned event has not had its id or signature checked.
func ParseEvent(data []byte) (*Event, error) {
	p := scanner{s: string(data)}
	ev := new(Event)
	if err := p.parseEvent(ev); err != nil {
		return nil, err
	}
	if !p.atEnd() {
		return nil, errors.New("invalid: unexpected data after the event object")
	}
	return ev, nil
}

// EventContent returns the "content" of the event object in data as
// ParseEvent decodes it, without decoding the other fields: they are
// skipped as JSON values, not checked as ParseEvent checks them, so it is
// for events already checked, such as a store reading back what it saved.
// It agrees with ParseEvent on every input ParseEvent accepts; every error's
// text starts with "invalid: ". The string does not share data's memory,
// and only it is allocated.
func EventContent(data []byte) (string, error) {
	// The scanner reads data in place; the content is detached below.
	p := scanner{s: unsafe.String(unsafe.SliceData(data), len(data))}
	if !p.consume('{') {
		return "", errors.New("invalid: event must be a JSON object")
	}
	content, found := "", false
	for empty := p.consume('}'); !empty; {
		key, se := p.readString()
		if se != strOK {
			if se == strNotString {
				return "", errSyntax
			}
			return "", fieldErr("event field name", se)
		}
		if !p.consume(':') {
			return "", errSyntax
		}
		switch {
		case key != "content":
			if err := p.skipValue(1); err != nil {
				return "", err
			}
		case found:
			return "", errors.New("invalid: duplicate field content")
		default:
			v, se := p.readString()
			if se != strOK {
				return "", fieldErr("content", se)
			}
			content, found = v, true
		}
		if p.consume(',') {
			continue
		}
		if !p.consume('}') {
			return "", errSyntax
		}
		break
	}
	if !found {
		return "", errors.New("invalid: missing field content")
	}
	if !p.atEnd() {
		return "", errors.New("invalid: unexpected data after the event object")
	}
	// An escaped content was built apart from data; a plain one is a
	// slice of it.
	if len(content) > 0 {
		at := uintptr(unsafe.Pointer(unsafe.StringData(content)))
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
		if at >= lo && at < lo+uintptr(len(data)) {
			content = strings.Clone(content)
		}
	}
	return content, nil
}

// UnmarshalJSON decodes the event with ParseEvent's rules.
func (e *Event) UnmarshalJSON(data []byte) error {
	p := scanner{s: string(data)}
	var ev Event
	if err := p.parseEvent(&ev); err != nil {
		return err
	}
	if !p.atEnd() {
		return errors.New("invalid: unexpected data after the event object")
	}
	*e = ev
	return nil
}

// MarshalJSON encodes the event as AppendJSON does.
func (e *Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, e.jsonSizeHint())), nil
}

func (e *Event) jsonSizeHint() int {
	n := 300 + len(e.Content)
	for _, t := range e.Tags {
		n += 3
		for _, v := range t {
			n += len(v) + 3
		}
	}
	return n
}

func fieldErr(field string, e strError) error {
	return errors.New("invalid: " + field + " " + e.reason())
}

// parseEvent decodes an event object at the cursor into ev.
func (p *scanner) parseEvent(ev *Event) error {
	if !p.consume('{') {
		return errors.New("invalid: event must be a JSON object")
	}
	seen := 0
	if p.consume('}') {
		return missingFieldErr(seen)
	}
	for {
		key, se := p.readString()
		if se != strOK {
			if se == strNotString {
				return errSyntax
			}
			return fieldErr("event field name", se)
		}
		if !p.consume(':') {
			return errSyntax
		}
		bit := 0
		switch key {
		case "id":
			bit = fieldID
		case "pubkey":
			bit = fieldPubKey
		case "created_at":
			bit = fieldCreatedAt
		case "kind":
			bit = fieldKind
		case "tags":
			bit = fieldTags
		case "content":
			bit = fieldContent
		case "sig":
			bit = fieldSig
		}
		if bit != 0 && seen&bit != 0 {
			return errors.New("invalid: duplicate field " + key)
		}
		seen |= bit
		switch bit {
		case fieldID:
			v, se := p.readString()
			if se != strOK || !IsLowerHex(v, 64) {
				return errors.New("invalid: id must be 64 lowercase hex characters")
			}
			ev.ID = v
		case fieldPubKey:
			v, se := p.readString()
			if se != strOK || !IsLowerHex(v, 64) {
				return errors.New("invalid: pubkey must be 64 lowercase hex characters")
			}
			ev.PubKey = v
		case fieldSig:
			v, se := p.readString()
			if se != strOK || !IsLowerHex(v, 128) {
				return errors.New("invalid: sig must be 128 lowercase hex characters")
			}
			ev.Sig = v
		case fieldCreatedAt:
			v, ne := p.readUint(maxInt64)
			switch ne {
			case numOK:
				ev.CreatedAt = int64(v)
			case numOverflow:
				return errors.New("invalid: created_at is too large")
			default:
				return errors.New("invalid: created_at must be a non-negative integer")
			}
		case fieldKind:
			v, ne := p.readUint(MaxKind)
			if ne != numOK {
				return errors.New("invalid: kind must be an integer between 0 and 65535")
			}
			ev.Kind = int(v)
		case fieldTags:
			tags, err := p.readTags()
			if err != nil {
				return err
			}
			ev.Tags = tags
		case fieldContent:
			v, se := p.readString()
			if se != strOK {
				return fieldErr("content", se)
			}
			ev.Content = v
		default:
			if err := p.skipValue(1); err != nil {
				return err
			}
		}
		if p.consume(',') {
			continue
		}
		if p.consume('}') {
			break
		}
		return errSyntax
	}
	if seen != fieldsAll {
		return missingFieldErr(seen)
	}
	return nil
}

func missingFieldErr(seen int) error {
	for _, f := range []struct {
		bit  int
		name string
	}{
		{fieldID, "id"}, {fieldPubKey, "pubkey"}, {fieldCreatedAt, "created_at"},
		{fieldKind, "kind"}, {fieldTags, "tags"}, {fieldContent, "content"}, {fieldSig, "sig"},
	} {
		if seen&f.bit == 0 {
			return errors.New("invalid: missing field " + f.name)
		}
	}
	return errSyntax
}

var errTagsShape = errors.New("invalid: tags must be an array of arrays of strings")

// readTags decodes the tags array. All tag elements share one backing array
// and every Tag is capped at its own length, so appending to one tag never
// overwrites the next.
func (p *scanner) readTags() (Tags, error) {
	if !p.consume('[') {
		return nil, errTagsShape
	}
	if p.consume(']') {
		return Tags{}, nil
	}
	var endsBuf [32]int
	ends := endsBuf[:0]
	flat := make([]string, 0, 16)
	for {
		if !p.consume('[') {
			return nil, errTagsShape
		}
		if !p.consume(']') {
			for {
				v, se := p.readString()
				if se != strOK {
					if se == strNotString {
						return nil, errTagsShape
					}
					return nil, fieldErr("tag value", se)
				}
				flat = append(flat, v)
				if p.consume(',') {
					continue
				}
				if p.consume(']') {
					break
				}
				return nil, errSyntax
			}
		}
		ends = append(ends, len(flat))
		if p.consume(',') {
			continue
		}
		if p.consume(']') {
			break
		}
		return nil, errSyntax
	}
	tags := make(Tags, len(ends))
	start := 0
	for i, end := range ends {
		tags[i] = Tag(flat[start:end:end])
		start = end
	}
	return tags, nil
}

// AppendJSON appends the event's wire JSON object to dst: the fields in the
// order id, pubkey, created_at, kind, tags, content, sig, without
// whitespace, strings escaped as AppendString does. For an event decoded
// from input in that same canonical form the output is byte-for-byte the
// input. A nil Tags is written as [].
func (e *Event) AppendJSON(dst []byte) []byte {
	// id, pubkey and sig, the field names and the two numbers.
	dst = grow(dst, 64+64+128+80+e.bodySize())
	dst = append(dst, `{"id":`...)
	dst = AppendString(dst, e.ID)
	dst = append(dst, `,"pubkey":`...)
	dst = AppendString(dst, e.PubKey)
	dst = append(dst, `,"created_at":`...)
	dst = appendInt(dst, e.CreatedAt)
	dst = append(dst, `,"kind":`...)
	dst = appendInt(dst, int64(e.Kind))
	dst = append(dst, `,"tags":`...)
	dst = e.Tags.appendJSON(dst)
	dst = append(dst, `,"content":`...)
	dst = AppendString(dst, e.Content)
	dst = append(dst, `,"sig":`...)
	dst = AppendString(dst, e.Sig)
	return append(dst, '}')
}

// bodySize is about the length of the event's tags and content as JSON,
// with room for some escapes: what AppendJSON and AppendCanonical grow
// their buffer by, so that writing them allocates once.
func (e *Event) bodySize() int {
	// Escapes lengthen a string past its length (a newline or a quote by
	// one byte): the content gets an eighth more, enough for ordinary
	// text; a string with more escapes costs one more allocation.
	n := len(e.Content) + len(e.Content)/8 + 16
	for _, t := range e.Tags {
		n += 3
		for _, v := range t {
			n += len(v) + 3
		}
	}
	return n
}

// stringSize is the length of AppendString's output for s: s with its
// quotes and escapes. It reads all of s: for short strings.
func stringSize(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// grow returns dst with room for n more bytes, in one allocation when it
// has not. (slices.Grow allocates twice under the race detector.)
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	nd := make([]byte, len(dst), len(dst)+n)
	copy(nd, dst)
	return nd
}

func (t Tags) appendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i, tag := range t {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		for j, v := range tag {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, v)
		}
		dst = append(dst, ']')
	}
	return append(dst, ']')
}

// AppendCanonical appends the NIP-01 id serialization of the event:
// [0,"<pubkey>",<created_at>,<kind>,<tags>,"<content>"] with no whitespace
// and NIP-01 string escaping. The event id is the sha256 of these bytes.
func (e *Event) AppendCanonical(dst []byte) []byte {
	// The pubkey, the punctuation and the two numbers.
	dst = grow(dst, 64+50+e.bodySize())
	dst = append(dst, `[0,`...)
	dst = AppendString(dst, e.PubKey)
	dst = append(dst, ',')
	dst = appendInt(dst, e.CreatedAt)
	dst = append(dst, ',')
	dst = appendInt(dst, int64(e.Kind))
	dst = append(dst, ',')
	dst = e.Tags.appendJSON(dst)
	dst = append(dst, ',')
	dst = AppendString(dst, e.Content)
	return append(dst, ']')
}

// hash returns the sha256 of the canonical serialization.
func (e *Event) hash() [32]byte {
	var buf [1024]byte
	return sha256.Sum256(e.AppendCanonical(buf[:0]))
}

// ComputeID returns the id the event's content hashes to (lowercase hex).
func (e *Event) ComputeID() string {
	h := e.hash()
	return string(appendHex(make([]byte, 0, 64), h[:]))
}

// CheckID reports whether e.ID is the id its content hashes to.
func (e *Event) CheckID() bool {
	if len(e.ID) != 64 {
		return false
	}
	h := e.hash()
	var buf [64]byte
	return string(appendHex(buf[:0], h[:])) == e.ID
}
