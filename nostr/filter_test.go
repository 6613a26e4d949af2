package nostr

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func i64(v int64) *int64 { return &v }

func TestParseFilterValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Filter
	}{
		{"empty", `{}`, Filter{}},
		{"everything", `{"ids":["` + hexA + `"],"authors":["` + hexB + `","` + hexA + `"],"kinds":[0,1,65535],"#e":["x","y"],"#P":[],"since":1,"until":2,"limit":0}`,
			Filter{IDs: []string{hexA}, Authors: []string{hexB, hexA}, Kinds: []int{0, 1, 65535},
				Tags: map[string][]string{"e": {"x", "y"}, "P": {}}, Since: i64(1), Until: i64(2), Limit: 0, LimitSet: true}},
		{"empty arrays stay non-nil", `{"ids":[],"authors":[],"kinds":[]}`, Filter{IDs: []string{}, Authors: []string{}, Kinds: []int{}}},
		{"whitespace", " { \"limit\" : 10 , \"#t\" : [ \"a\\u00e9\" ] } ", Filter{Limit: 10, LimitSet: true, Tags: map[string][]string{"t": {"aé"}}}},
		{"huge limit saturates", `{"limit":99999999999999999999999}`, Filter{Limit: math.MaxInt, LimitSet: true}},
		{"huge until saturates", `{"until":99999999999999999999999,"since":0}`, Filter{Until: i64(math.MaxInt64), Since: i64(0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFilter([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			// AppendJSON → ParseFilter gives the same filter back.
			again, err := ParseFilter(got.AppendJSON(nil))
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip via %s: %+v, %v", got.AppendJSON(nil), again, err)
			}
		})
	}
}

func TestParseFilterInvalid(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"not object", `[]`, "invalid: filter must be a JSON object"},
		{"null", `null`, "invalid: filter must be a JSON object"},
		{"ids not array", `{"ids":"` + hexA + `"}`, "invalid: ids must be an array of 64-character lowercase hex strings"},
		{"ids null", `{"ids":null}`, "invalid: ids must be an array of 64-character lowercase hex strings"},
		{"ids prefix", `{"ids":["aaaa"]}`, "invalid: ids must be an array of 64-character lowercase hex strings"},
		{"ids uppercase", `{"ids":["` + strings.ToUpper(hexA) + `"]}`, "invalid: ids must be an array of 64-character lowercase hex strings"},
		{"authors number", `{"authors":[1]}`, "invalid: authors must be an array of 64-character lowercase hex strings"},
		{"kinds string", `{"kinds":["1"]}`, "invalid: kinds must be an array of integers between 0 and 65535"},
		{"kinds float", `{"kinds":[1.5]}`, "invalid: kinds must be an array of integers between 0 and 65535"},
		{"kinds negative", `{"kinds":[-1]}`, "invalid: kinds must be an array of integers between 0 and 65535"},
		{"kinds too big", `{"kinds":[65536]}`, "invalid: kinds must be an array of integers between 0 and 65535"},
		{"kinds not array", `{"kinds":1}`, "invalid: kinds must be an array of integers between 0 and 65535"},
		{"since negative", `{"since":-1}`, "invalid: since must be a non-negative integer"},
		{"since float", `{"since":1.5}`, "invalid: since must be a non-negative integer"},
		{"since string", `{"since":"1"}`, "invalid: since must be a non-negative integer"},
		{"until exponent", `{"until":1e3}`, "invalid: until must be a non-negative integer"},
		{"limit negative", `{"limit":-5}`, "invalid: limit must be a non-negative integer"},
		{"limit null", `{"limit":null}`, "invalid: limit must be a non-negative integer"},
		{"tag values number", `{"#e":[1]}`, "invalid: #e must be an array of strings"},
		{"tag values string", `{"#e":"x"}`, "invalid: #e must be an array of strings"},
		{"tag value bad utf8", "{\"#e\":[\"\xff\"]}", "invalid: #e value contains invalid UTF-8"},
		{"tag value lone surrogate", `{"#e":["\ud800"]}`, "invalid: #e value contains a lone UTF-16 surrogate escape"},
		{"multi-letter tag", `{"#ee":["x"]}`, `invalid: unknown filter field "#ee"`},
		{"digit tag", `{"#1":["x"]}`, `invalid: unknown filter field "#1"`},
		{"bare hash", `{"#":["x"]}`, `invalid: unknown filter field "#"`},
		{"unknown field", `{"foo":1}`, `invalid: unknown filter field "foo"`},
		{"long unknown field", `{"` + strings.Repeat("x", 100) + `":1}`, `invalid: unknown filter field "` + strings.Repeat("x", 64) + `..."`},
		{"search number", `{"search":1}`, "invalid: search must be a string"},
		{"search empty", `{"search":""}`, "invalid: search query has no words to match"},
		{"duplicate search", `{"search":"a","search":"b"}`, "invalid: duplicate filter field search"},
		{"duplicate kinds", `{"kinds":[1],"kinds":[2]}`, "invalid: duplicate filter field kinds"},
		{"duplicate tag", `{"#e":["a"],"#e":["b"]}`, "invalid: duplicate filter field #e"},
		{"duplicate limit", `{"limit":1,"limit":1}`, "invalid: duplicate filter field limit"},
		{"trailing", `{}x`, "invalid: unexpected data after the filter object"},
		{"trailing comma", `{"limit":1,}`, "invalid: malformed JSON"},
		{"unterminated", `{"kinds":[1`, "invalid: malformed JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFilter([]byte(tc.in))
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			if err.Error() != tc.wantErr {
				t.Fatalf("error %q, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestFilterMatches(t *testing.T) {
	e := &Event{ID: hexA, PubKey: hexB, CreatedAt: 100, Kind: 1,
		Tags: Tags{{"e", "x"}, {"p", "y", "relay"}, {"t"}, {"T", "Up"}}}
	tests := []struct {
		name string
		f    Filter
		want bool
	}{
		{"empty filter", Filter{}, true},
		{"id", Filter{IDs: []string{hexB, hexA}}, true},
		{"other id", Filter{IDs: []string{hexB}}, false},
		{"empty ids", Filter{IDs: []string{}}, false},
		{"author", Filter{Authors: []string{hexB}}, true},
		{"other author", Filter{Authors: []string{hexA}}, false},
		{"kind", Filter{Kinds: []int{0, 1}}, true},
		{"other kind", Filter{Kinds: []int{0}}, false},
		{"empty kinds", Filter{Kinds: []int{}}, false},
		{"since inclusive", Filter{Since: i64(100)}, true},
		{"since after", Filter{Since: i64(101)}, false},
		{"until inclusive", Filter{Until: i64(100)}, true},
		{"until before", Filter{Until: i64(99)}, false},
		{"since > until", Filter{Since: i64(101), Until: i64(99)}, false},
		{"limit ignored", Filter{Limit: 0, LimitSet: true}, true},
		{"tag", Filter{Tags: map[string][]string{"e": {"z", "x"}}}, true},
		{"tag with extra elements", Filter{Tags: map[string][]string{"p": {"y"}}}, true},
		{"tag value is element 1 only", Filter{Tags: map[string][]string{"p": {"relay"}}}, false},
		{"tag name case matters", Filter{Tags: map[string][]string{"E": {"x"}}}, false},
		{"uppercase tag", Filter{Tags: map[string][]string{"T": {"Up"}}}, true},
		{"value case matters", Filter{Tags: map[string][]string{"T": {"up"}}}, false},
		{"tag without value never matches", Filter{Tags: map[string][]string{"t": {""}}}, false},
		{"two tags AND", Filter{Tags: map[string][]string{"e": {"x"}, "p": {"y"}}}, true},
		{"two tags one missing", Filter{Tags: map[string][]string{"e": {"x"}, "p": {"nope"}}}, false},
		{"empty tag list", Filter{Tags: map[string][]string{"e": {}}}, false},
		{"nil tag list is no constraint", Filter{Tags: map[string][]string{"e": nil}}, true},
		{"all together", Filter{IDs: []string{hexA}, Authors: []string{hexB}, Kinds: []int{1}, Since: i64(0), Until: i64(100), Tags: map[string][]string{"e": {"x"}}}, true},
		{"all but one", Filter{IDs: []string{hexA}, Authors: []string{hexB}, Kinds: []int{2}, Since: i64(0), Until: i64(100)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Matches(e); got != tc.want {
				t.Fatalf("Matches = %v, want %v", got, tc.want)
			}
			if got := refMatches(&tc.f, e); got != tc.want {
				t.Fatalf("reference matcher = %v, want %v (test is wrong)", got, tc.want)
			}
		})
	}
}

// TestFilterMatchesDifferential compares Matches with the brute-force
// reference over random events and filters drawn from a small alphabet, so
// that both matches and misses are frequent.
func TestFilterMatchesDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	hexes := []string{hexA, hexB, strings.Repeat("c", 64), strings.Repeat("d", 64)}
	vals := []string{"", "a", "b", "c"}
	names := []string{"e", "p", "t", "E"}
	pick := func(list []string) []string {
		if rng.IntN(3) == 0 {
			return nil
		}
		out := []string{}
		for range rng.IntN(3) {
			out = append(out, list[rng.IntN(len(list))])
		}
		return out
	}
	matched := 0
	const n = 20000
	for range n {
		e := &Event{ID: hexes[rng.IntN(4)], PubKey: hexes[rng.IntN(4)], CreatedAt: rng.Int64N(10), Kind: rng.IntN(4)}
		for range rng.IntN(4) {
			tag := Tag{names[rng.IntN(4)]}
			for range rng.IntN(3) {
				tag = append(tag, vals[rng.IntN(4)])
			}
			e.Tags = append(e.Tags, tag)
		}
		f := Filter{IDs: pick(hexes), Authors: pick(hexes)}
		if rng.IntN(2) == 0 {
			f.Kinds = []int{}
			for range rng.IntN(3) {
				f.Kinds = append(f.Kinds, rng.IntN(4))
			}
		}
		if rng.IntN(2) == 0 {
			f.Since = i64(rng.Int64N(10))
		}
		if rng.IntN(2) == 0 {
			f.Until = i64(rng.Int64N(10))
		}
		for range rng.IntN(3) {
			if f.Tags == nil {
				f.Tags = map[string][]string{}
			}
			f.Tags[names[rng.IntN(4)]] = pick(vals)
		}
		want := refMatches(&f, e)
		if got := f.Matches(e); got != want {
			t.Fatalf("Matches = %v, reference %v\nfilter %s\nevent %s", got, want, f.AppendJSON(nil), e.AppendJSON(nil))
		}
		// A filter that survives a JSON round trip matches the same way.
		if g, err := ParseFilter(f.AppendJSON(nil)); err != nil || g.Matches(e) != want {
			t.Fatalf("round-tripped filter disagrees (%v): %s", err, f.AppendJSON(nil))
		}
		if want {
			matched++
		}
	}
	if matched < n/50 || matched > n-n/50 {
		t.Fatalf("only %d of %d matched: the generator does not exercise both outcomes", matched, n)
	}
}

func TestFilterAppendJSON(t *testing.T) {
	f := Filter{IDs: []string{hexA}, Kinds: []int{1, 2}, Tags: map[string][]string{"t": {"x\"\n"}, "e": {}, "p": nil},
		Since: i64(5), Limit: 0, LimitSet: true}
	want := `{"ids":["` + hexA + `"],"kinds":[1,2],"#e":[],"#t":["x\"\n"],"since":5,"limit":0}`
	if got := string(f.AppendJSON(nil)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	mj, err := json.Marshal(f)
	if err != nil || string(mj) != want {
		t.Fatalf("MarshalJSON = %s, %v", mj, err)
	}
	var u Filter
	if err := json.Unmarshal(mj, &u); err != nil || !reflect.DeepEqual(u.Kinds, f.Kinds) || !u.LimitSet {
		t.Fatalf("UnmarshalJSON: %+v %v", u, err)
	}
	if err := json.Unmarshal([]byte(`{"kinds":"x"}`), &u); err == nil {
		t.Fatal("UnmarshalJSON accepted a bad filter")
	}
}

// TestFilterSearch: the search string is kept as written and round-trips;
// package nostr does not read it, and Matches fails closed on it (package
// search matches it).
func TestFilterSearch(t *testing.T) {
	f, err := ParseFilter([]byte(`{"kinds":[1,1059],"search":"Hello \"big world\" include:spam"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Search != `Hello "big world" include:spam` {
		t.Fatalf("Search = %q", f.Search)
	}
	again, err := ParseFilter(f.AppendJSON(nil))
	if err != nil || !reflect.DeepEqual(again, f) {
		t.Fatalf("round trip via %s: %+v, %v", f.AppendJSON(nil), again, err)
	}
	// Not read here: a string search.Parse refuses is carried all the same.
	if g, err := ParseFilter([]byte(`{"search":"include:spam"}`)); err != nil || g.Search != "include:spam" {
		t.Fatalf("ParseFilter(extensions only) = %+v, %v", g, err)
	}
	e := &Event{Kind: 1, Content: "hello big world"}
	if f.Matches(e) || NewMatcher(&f).Matches(e) {
		t.Error("a filter with a search matched in package nostr")
	}
	if !f.MatchesIgnoringSearch(e) || !NewMatcher(&f).MatchesIgnoringSearch(e) {
		t.Error("MatchesIgnoringSearch refused an event meeting every other constraint")
	}
}
