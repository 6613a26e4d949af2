package nostr

import "slices"

// setMin is the list length from which a Matcher holds a list as a set: a
// linear search of a shorter one is as fast as a hash lookup.
const setMin = 16

// Matcher is a Filter prepared for matching many events, as live
// subscriptions are: a list of setMin values or more is held as a set, so
// that the cost of Matches does not grow with the number of values the
// filter lists. It matches exactly what (*Filter).Matches matches. The
// filter must not be modified while the Matcher is in use; a Matcher is
// safe for concurrent use.
type Matcher struct {
	f       *Filter
	ids     map[string]struct{}
	authors map[string]struct{}
	kinds   map[int]struct{}
	tags    map[string]map[string]struct{} // tag name → value set, for long lists
}

// NewMatcher prepares f for matching.
func NewMatcher(f *Filter) *Matcher {
	m := &Matcher{f: f}
	m.ids = stringSet(f.IDs)
	m.authors = stringSet(f.Authors)
	if len(f.Kinds) >= setMin {
		m.kinds = make(map[int]struct{}, len(f.Kinds))
		for _, k := range f.Kinds {
			m.kinds[k] = struct{}{}
		}
	}
	for name, vals := range f.Tags {
		if s := stringSet(vals); s != nil {
			if m.tags == nil {
				m.tags = make(map[string]map[string]struct{})
			}
			m.tags[name] = s
		}
	}
	return m
}

func stringSet(vals []string) map[string]struct{} {
	if len(vals) < setMin {
		return nil
	}
	s := make(map[string]struct{}, len(vals))
	for _, v := range vals {
		s[v] = struct{}{}
	}
	return s
}

// Filter returns the filter m matches.
func (m *Matcher) Filter() *Filter { return m.f }

// Matches reports whether e satisfies every constraint of the filter, as
// (*Filter).Matches does: a filter with a Search matches nothing here
// (search.Matcher checks the search too).
func (m *Matcher) Matches(e *Event) bool {
	return m.f.Search == "" && m.MatchesIgnoringSearch(e)
}

// MatchesIgnoringSearch is (*Filter).MatchesIgnoringSearch, with the sets.
func (m *Matcher) MatchesIgnoringSearch(e *Event) bool {
	f := m.f
	if f.Since != nil && e.CreatedAt < *f.Since {
		return false
	}
	if f.Until != nil && e.CreatedAt > *f.Until {
		return false
	}
	if f.Kinds != nil {
		if m.kinds != nil {
			if _, ok := m.kinds[e.Kind]; !ok {
				return false
			}
		} else if !slices.Contains(f.Kinds, e.Kind) {
			return false
		}
	}
	if f.Authors != nil && !inList(f.Authors, m.authors, e.PubKey) {
		return false
	}
	if f.IDs != nil && !inList(f.IDs, m.ids, e.ID) {
		return false
	}
	for name, vals := range f.Tags {
		if vals == nil {
			continue
		}
		set := m.tags[name]
		found := false
		for _, t := range e.Tags {
			if len(t) >= 2 && t[0] == name && inList(vals, set, t[1]) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// inList looks v up in set when there is one, else in list.
func inList(list []string, set map[string]struct{}, v string) bool {
	if set != nil {
		_, ok := set[v]
		return ok
	}
	return slices.Contains(list, v)
}
