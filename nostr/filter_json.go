package nostr

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ParseFilter decodes one filter object strictly.
//
// Accepted fields: "ids" and "authors" (arrays of 64 lowercase hex
// strings; prefixes are not supported), "kinds" (array of integers
// 0..65535), "#x" where x is one ASCII letter (array of strings), "since",
// "until" and "limit" (non-negative integers; values beyond int64 saturate,
// which keeps their meaning: "until far future" and "as many as allowed"),
// and "search" (a non-empty NIP-50 query string, kept as written: package
// search parses it where a filter is used, search.CheckFilters refusing a
// bad one). A field may
// appear once. Any other field is refused with "invalid: unknown filter
// field <name>" — silently ignoring a constraint would return events the
// client did not ask for.
//
// An empty array is kept as a non-nil empty slice, which matches nothing.
// Errors start with "invalid: ".
func ParseFilter(data []byte) (Filter, error) {
	p := scanner{s: string(data)}
	f, err := p.parseFilter()
	if err != nil {
		return Filter{}, err
	}
	if !p.atEnd() {
		return Filter{}, errors.New("invalid: unexpected data after the filter object")
	}
	return f, nil
}

// UnmarshalJSON decodes the filter with ParseFilter's rules.
func (f *Filter) UnmarshalJSON(data []byte) error {
	g, err := ParseFilter(data)
	if err != nil {
		return err
	}
	*f = g
	return nil
}

// MarshalJSON encodes the filter as AppendJSON does.
func (f Filter) MarshalJSON() ([]byte, error) {
	return f.AppendJSON(nil), nil
}

func (p *scanner) parseFilter() (Filter, error) {
	var f Filter
	if !p.consume('{') {
		return f, errors.New("invalid: filter must be a JSON object")
	}
	if p.consume('}') {
		return f, nil
	}
	var seen uint8
	const (
		seenIDs = 1 << iota
		seenAuthors
		seenKinds
		seenSince
		seenUntil
		seenLimit
		seenSearch
	)
	once := func(bit uint8, name string) error {
		if seen&bit != 0 {
			return errors.New("invalid: duplicate filter field " + name)
		}
		seen |= bit
		return nil
	}
	for {
		key, se := p.readString()
		if se != strOK {
			if se == strNotString {
				return f, errSyntax
			}
			return f, fieldErr("filter field name", se)
		}
		if !p.consume(':') {
			return f, errSyntax
		}
		var err error
		switch key {
		case "ids":
			if err = once(seenIDs, key); err == nil {
				f.IDs, err = p.readHexArray("ids")
			}
		case "authors":
			if err = once(seenAuthors, key); err == nil {
				f.Authors, err = p.readHexArray("authors")
			}
		case "kinds":
			if err = once(seenKinds, key); err == nil {
				f.Kinds, err = p.readKinds()
			}
		case "since":
			if err = once(seenSince, key); err == nil {
				var v int64
				v, err = p.readTimestamp("since")
				f.Since = &v
			}
		case "until":
			if err = once(seenUntil, key); err == nil {
				var v int64
				v, err = p.readTimestamp("until")
				f.Until = &v
			}
		case "limit":
			if err = once(seenLimit, key); err == nil {
				v, ne := p.readUint(math.MaxInt64)
				switch ne {
				case numOK, numOverflow:
					f.Limit = int(min(v, uint64(math.MaxInt)))
					f.LimitSet = true
				default:
					err = errors.New("invalid: limit must be a non-negative integer")
				}
			}
		case "search":
			if err = once(seenSearch, key); err == nil {
				err = p.readSearch(&f)
			}
		default:
			if len(key) != 2 || key[0] != '#' || !isASCIILetter(key[1]) {
				return f, errors.New("invalid: unknown filter field " + quoteForError(key))
			}
			name := key[1:]
			if _, dup := f.Tags[name]; dup {
				return f, errors.New("invalid: duplicate filter field " + key)
			}
			var vals []string
			vals, err = p.readStringArray(key)
			if err == nil {
				if f.Tags == nil {
					f.Tags = make(map[string][]string, 1)
				}
				f.Tags[name] = vals
			}
		}
		if err != nil {
			return f, err
		}
		if p.consume(',') {
			continue
		}
		if p.consume('}') {
			return f, nil
		}
		return f, errSyntax
	}
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// quoteForError bounds and quotes a client-supplied name for an error text.
func quoteForError(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return string(AppendString(nil, s))
}

func (p *scanner) readSearch(f *Filter) error {
	v, se := p.readString()
	if se != strOK {
		if se == strNotString {
			return errors.New("invalid: search must be a string")
		}
		return fieldErr("search", se)
	}
	if v == "" {
		// Search "" means no constraint, so a present but empty search
		// cannot be carried: refused here, with the text search.Parse
		// gives an empty query.
		return errors.New("invalid: search query has no words to match")
	}
	f.Search = v
	return nil
}

func (p *scanner) readTimestamp(field string) (int64, error) {
	v, ne := p.readUint(math.MaxInt64)
	switch ne {
	case numOK, numOverflow:
		return int64(v), nil
	}
	return 0, errors.New("invalid: " + field + " must be a non-negative integer")
}

func (p *scanner) readHexArray(field string) ([]string, error) {
	shape := func() error {
		return errors.New("invalid: " + field + " must be an array of 64-character lowercase hex strings")
	}
	if !p.consume('[') {
		return nil, shape()
	}
	out := []string{}
	if p.consume(']') {
		return out, nil
	}
	for {
		v, se := p.readString()
		if se != strOK || !IsLowerHex(v, 64) {
			return nil, shape()
		}
		if err := p.checkValues(field, len(out)); err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.consume(',') {
			continue
		}
		if p.consume(']') {
			return out, nil
		}
		return nil, errSyntax
	}
}

// checkValues refuses one more value in field when n values are already
// held and the scanner bounds values per field.
func (p *scanner) checkValues(field string, n int) error {
	if p.maxValues > 0 && n >= p.maxValues {
		return fmt.Errorf("invalid: too many values in %s (limit %d)", field, p.maxValues)
	}
	return nil
}

func (p *scanner) readStringArray(field string) ([]string, error) {
	if !p.consume('[') {
		return nil, errors.New("invalid: " + field + " must be an array of strings")
	}
	out := []string{}
	if p.consume(']') {
		return out, nil
	}
	for {
		v, se := p.readString()
		if se != strOK {
			if se == strNotString {
				return nil, errors.New("invalid: " + field + " must be an array of strings")
			}
			return nil, fieldErr(field+" value", se)
		}
		if err := p.checkValues(field, len(out)); err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.consume(',') {
			continue
		}
		if p.consume(']') {
			return out, nil
		}
		return nil, errSyntax
	}
}

var errKindsShape = errors.New("invalid: kinds must be an array of integers between 0 and 65535")

func (p *scanner) readKinds() ([]int, error) {
	if !p.consume('[') {
		return nil, errKindsShape
	}
	out := []int{}
	if p.consume(']') {
		return out, nil
	}
	for {
		v, ne := p.readUint(MaxKind)
		if ne != numOK {
			return nil, errKindsShape
		}
		if err := p.checkValues("kinds", len(out)); err != nil {
			return nil, err
		}
		out = append(out, int(v))
		if p.consume(',') {
			continue
		}
		if p.consume(']') {
			return out, nil
		}
		return nil, errSyntax
	}
}

// AppendJSON appends the filter as a JSON object: ids, authors, kinds, the
// tag fields sorted by name, since, until, limit if LimitSet, then search
// if set. Nil slices are omitted; empty ones are written as [].
func (f Filter) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	first := true
	sep := func() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
	}
	if f.IDs != nil {
		sep()
		dst = append(dst, `"ids":`...)
		dst = appendStrings(dst, f.IDs)
	}
	if f.Authors != nil {
		sep()
		dst = append(dst, `"authors":`...)
		dst = appendStrings(dst, f.Authors)
	}
	if f.Kinds != nil {
		sep()
		dst = append(dst, `"kinds":[`...)
		for i, k := range f.Kinds {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendInt(dst, int64(k))
		}
		dst = append(dst, ']')
	}
	if len(f.Tags) > 0 {
		names := make([]string, 0, len(f.Tags))
		for name := range f.Tags {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if f.Tags[name] == nil {
				continue
			}
			sep()
			dst = AppendString(dst, "#"+name)
			dst = append(dst, ':')
			dst = appendStrings(dst, f.Tags[name])
		}
	}
	if f.Since != nil {
		sep()
		dst = append(dst, `"since":`...)
		dst = appendInt(dst, *f.Since)
	}
	if f.Until != nil {
		sep()
		dst = append(dst, `"until":`...)
		dst = appendInt(dst, *f.Until)
	}
	if f.LimitSet {
		sep()
		dst = append(dst, `"limit":`...)
		dst = appendInt(dst, int64(f.Limit))
	}
	if f.Search != "" {
		sep()
		dst = append(dst, `"search":`...)
		dst = AppendString(dst, f.Search)
	}
	return append(dst, '}')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}

// Matches reports whether e satisfies every constraint of the filter, as
// NIP-01 defines: the id is in IDs, the author in Authors, the kind in
// Kinds, Since <= created_at <= Until, and for every tag key in Tags the
// event has a tag with that name whose first value is in the list. Limit is
// not considered. A nil slice is no constraint; an empty one matches nothing.
//
// A filter with a Search matches no event here: the query language is
// package search's, and search.Matches (or search.Matcher) checks the
// search with the other constraints. Failing closed keeps a caller that
// forgets the search from returning events the client did not ask for.
func (f *Filter) Matches(e *Event) bool {
	return f.Search == "" && f.MatchesIgnoringSearch(e)
}

// MatchesIgnoringSearch reports whether e satisfies every constraint of the
// filter but Search, as Matches describes: what package search combines
// with a parsed query.
func (f *Filter) MatchesIgnoringSearch(e *Event) bool {
	if f.Since != nil && e.CreatedAt < *f.Since {
		return false
	}
	if f.Until != nil && e.CreatedAt > *f.Until {
		return false
	}
	if f.Kinds != nil && !slices.Contains(f.Kinds, e.Kind) {
		return false
	}
	if f.Authors != nil && !slices.Contains(f.Authors, e.PubKey) {
		return false
	}
	if f.IDs != nil && !slices.Contains(f.IDs, e.ID) {
		return false
	}
	for name, vals := range f.Tags {
		if !tagMatches(e.Tags, name, vals) {
			return false
		}
	}
	return true
}

// tagMatches reports whether some tag named name has its value in vals.
func tagMatches(tags Tags, name string, vals []string) bool {
	if vals == nil {
		return true
	}
	for _, t := range tags {
		if len(t) >= 2 && t[0] == name && slices.Contains(vals, t[1]) {
			return true
		}
	}
	return false
}
