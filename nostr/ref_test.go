package nostr

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// This file holds deliberately simple reference implementations built on
// encoding/json, used as oracles in differential tests and fuzz targets.

var refUint = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// refObject decodes a JSON object into its members, refusing duplicate keys
// and non-objects. Values are kept raw.
func refObject(data []byte) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := tok.(string)
		if !ok {
			return nil, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		m[key] = raw
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return m, true
}

// refParseEvent is ParseEvent written the obvious way. It returns ok=false
// for anything ParseEvent must refuse, except lone surrogate escapes, which
// encoding/json silently replaces (callers account for that).
func refParseEvent(data []byte) (*Event, bool) {
	if !utf8.Valid(data) || !json.Valid(data) {
		return nil, false
	}
	m, ok := refObject(data)
	if !ok {
		return nil, false
	}
	var e Event
	str := func(key string, dst *string) bool {
		raw, ok := m[key]
		if !ok || len(raw) == 0 || raw[0] != '"' {
			return false
		}
		return json.Unmarshal(raw, dst) == nil
	}
	uint := func(key string, max uint64) (uint64, bool) {
		raw, ok := m[key]
		if !ok || !refUint.Match(raw) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(raw), 10, 64)
		return v, err == nil && v <= max
	}
	if !str("id", &e.ID) || !IsLowerHex(e.ID, 64) ||
		!str("pubkey", &e.PubKey) || !IsLowerHex(e.PubKey, 64) ||
		!str("sig", &e.Sig) || !IsLowerHex(e.Sig, 128) ||
		!str("content", &e.Content) {
		return nil, false
	}
	ca, ok := uint("created_at", maxInt64)
	if !ok {
		return nil, false
	}
	e.CreatedAt = int64(ca)
	k, ok := uint("kind", MaxKind)
	if !ok {
		return nil, false
	}
	e.Kind = int(k)
	raw, ok := m["tags"]
	if !ok {
		return nil, false
	}
	var outer []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &outer) != nil {
		return nil, false
	}
	e.Tags = Tags{}
	for _, r := range outer {
		var inner []json.RawMessage
		if len(r) == 0 || r[0] != '[' || json.Unmarshal(r, &inner) != nil {
			return nil, false
		}
		tag := Tag{}
		for _, v := range inner {
			var s string
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
				return nil, false
			}
			tag = append(tag, s)
		}
		e.Tags = append(e.Tags, tag)
	}
	return &e, true
}

// sameEvent compares two events field by field (nil and empty tag lists
// are the same).
func sameEvent(a, b *Event) error {
	switch {
	case a.ID != b.ID:
		return errors.New("id differs")
	case a.PubKey != b.PubKey:
		return errors.New("pubkey differs")
	case a.CreatedAt != b.CreatedAt:
		return errors.New("created_at differs")
	case a.Kind != b.Kind:
		return errors.New("kind differs")
	case a.Content != b.Content:
		return errors.New("content differs")
	case a.Sig != b.Sig:
		return errors.New("sig differs")
	case len(a.Tags) != len(b.Tags):
		return errors.New("tag count differs")
	}
	for i := range a.Tags {
		if len(a.Tags[i]) != len(b.Tags[i]) {
			return errors.New("tag length differs")
		}
		for j := range a.Tags[i] {
			if a.Tags[i][j] != b.Tags[i][j] {
				return errors.New("tag value differs")
			}
		}
	}
	return nil
}

// refMatches is Filter.Matches written as a literal reading of NIP-01.
func refMatches(f *Filter, e *Event) bool {
	in := func(list []string, v string) bool {
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	}
	if f.IDs != nil && !in(f.IDs, e.ID) {
		return false
	}
	if f.Authors != nil && !in(f.Authors, e.PubKey) {
		return false
	}
	if f.Kinds != nil {
		found := false
		for _, k := range f.Kinds {
			found = found || k == e.Kind
		}
		if !found {
			return false
		}
	}
	if f.Since != nil && e.CreatedAt < *f.Since {
		return false
	}
	if f.Until != nil && e.CreatedAt > *f.Until {
		return false
	}
	for name, vals := range f.Tags {
		if vals == nil {
			continue
		}
		found := false
		for _, t := range e.Tags {
			if len(t) > 1 && t[0] == name && in(vals, t[1]) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
