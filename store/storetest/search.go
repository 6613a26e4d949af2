package storetest

import (
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

// RunSearch is the NIP-50 conformance suite: a filter's Search on Query,
// QueryScoped, Count and CountScoped. Both backends rank a single word by
// its frequency in the event, ties newest first, and must agree on that
// order exactly. For several words or a phrase PostgreSQL's ts_rank weighs
// each word's frequency and their proximity, while the embedded store sums
// the frequencies of whole words and phrases (search.Query.Score), so those
// results are compared as sets (docs/protocol.md, "Search").
func RunSearch(t *testing.T, open func(t *testing.T) ChannelBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b ChannelBackend)
	}{
		{"RelevanceOrder", testSearchRelevance},
		{"CombinedWithOtherFields", testSearchCombined},
		{"PhrasesAndWords", testSearchPhrases},
		{"Count", testSearchCount},
		{"CommunityIsolation", testSearchIsolation},
		{"ChannelScope", testSearchScope},
		{"DeletedAndReplaced", testSearchDeleted},
		{"Unicode", testSearchUnicode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

func searchFilter(t *testing.T, q string) nostr.Filter {
	t.Helper()
	f, err := nostr.ParseFilter(append(append([]byte(`{"search":`), nostr.AppendString(nil, q)...), '}'))
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return f
}

func limited(f nostr.Filter, n int) nostr.Filter {
	f.Limit, f.LimitSet = n, true
	return f
}

func ids(evs ...*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func testSearchRelevance(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a, o := NewAuthor(t), NewAuthor(t)
	three := a.Event(t, 1, base+1, "zebra zebra zebra")
	short1 := a.Event(t, 1, base+2, "zebra one two")
	long1 := a.Event(t, 1, base+3, "a zebra crossing, with many more words around it than the others")
	short2 := o.Event(t, 1, base+4, "Zebra one two")
	punct := a.Event(t, 1, base+5, "zebras are not zebra-ish")
	twice := o.Event(t, 30023, base+6, "ZEBRA? zebra.", nostr.Tag{"d", "z"})
	none := a.Event(t, 1, base+7, "zebras only, and a horse")
	wrap := o.Event(t, nostr.KindGiftWrap, base+8, "zebra zebra zebra zebra", nostr.Tag{"p", a.PubKey})
	for _, e := range []*nostr.Event{three, short1, long1, short2, punct, twice, none, wrap} {
		MustSave(t, b, c, e)
	}
	// By frequency (3, 2, then 1), ties newest first; never the gift wrap.
	want := ids(three, twice, punct, short2, long1, short1)
	wantIDs(t, "search zebra", QueryIDs(t, b, c, searchFilter(t, "zebra")), want...)
	// The limit applies after ranking: the best two, not the newest two.
	wantIDs(t, "search zebra limit 2", QueryIDs(t, b, c, limited(searchFilter(t, "zebra"), 2)), want[:2]...)
	wantIDs(t, "limit 0", QueryIDs(t, b, c, limited(searchFilter(t, "zebra"), 0)))
	wantIDs(t, "no such word", QueryIDs(t, b, c, searchFilter(t, "giraffe")))
	// A gift wrap is not found even when asked for by kind.
	f := searchFilter(t, "zebra")
	f.Kinds = []int{nostr.KindGiftWrap}
	wantIDs(t, "gift wraps", QueryIDs(t, b, c, f))
}

func testSearchCombined(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a, o := NewAuthor(t), NewAuthor(t)
	e1 := a.Event(t, 1, base+1, "coffee morning", nostr.Tag{"t", "drink"})
	e2 := o.Event(t, 1, base+2, "coffee coffee evening", nostr.Tag{"t", "drink"})
	e3 := a.Event(t, 9, base+3, "coffee in the channel")
	e4 := a.Event(t, 1, base+4, "tea morning", nostr.Tag{"t", "drink"})
	for _, e := range []*nostr.Event{e1, e2, e3, e4} {
		MustSave(t, b, c, e)
	}
	f := searchFilter(t, "coffee")
	f.Kinds = []int{1}
	wantIDs(t, "kinds", QueryIDs(t, b, c, f), e2.ID, e1.ID)
	f = searchFilter(t, "coffee")
	f.Authors = []string{a.PubKey}
	wantIDs(t, "authors", QueryIDs(t, b, c, f), e3.ID, e1.ID)
	f = searchFilter(t, "coffee")
	f.Tags = map[string][]string{"t": {"drink"}}
	wantIDs(t, "#t", QueryIDs(t, b, c, f), e2.ID, e1.ID)
	f = searchFilter(t, "coffee")
	since, until := base+2, base+3
	f.Since, f.Until = &since, &until
	wantIDs(t, "since/until", QueryIDs(t, b, c, f), e2.ID, e3.ID)
	f = searchFilter(t, "morning")
	f.IDs = []string{e4.ID, e2.ID}
	wantIDs(t, "ids", QueryIDs(t, b, c, f), e4.ID)
}

func testSearchPhrases(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a := NewAuthor(t)
	e1 := a.Event(t, 1, base+1, "the group commit path, then the group")
	e2 := a.Event(t, 1, base+2, "commit to the group")
	e3 := a.Event(t, 1, base+3, "see https://example.com/group-commit")
	for _, e := range []*nostr.Event{e1, e2, e3} {
		MustSave(t, b, c, e)
	}
	asSet := func(what string, got []string, want ...string) {
		t.Helper()
		slices.Sort(got)
		slices.Sort(want)
		wantIDs(t, what, got, want...)
	}
	asSet(`"group commit"`, QueryIDs(t, b, c, searchFilter(t, `"group commit"`)), e3.ID, e1.ID)
	wantIDs(t, `"commit group"`, QueryIDs(t, b, c, searchFilter(t, `"commit group"`)))
	wantIDs(t, "example.com is a phrase", QueryIDs(t, b, c, searchFilter(t, "Example.COM")), e3.ID)
	// Phrases and several words: every one must occur; the order of the
	// result is engine-specific (see RunSearch).
	asSet("group commit", QueryIDs(t, b, c, searchFilter(t, "group commit")), e1.ID, e2.ID, e3.ID)
	asSet("commit path", QueryIDs(t, b, c, searchFilter(t, "path commit")), e1.ID)
	asSet("extensions ignored", QueryIDs(t, b, c, searchFilter(t, "path include:spam language:en")), e1.ID)
}

func testSearchCount(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a := NewAuthor(t)
	e1 := a.Event(t, 1, base+1, "lightning zap")
	e2 := a.Event(t, 7, base+2, "lightning")
	e3 := a.Event(t, 1, base+3, "bitcoin")
	wrap := a.Event(t, nostr.KindGiftWrap, base+4, "lightning", nostr.Tag{"p", a.PubKey})
	for _, e := range []*nostr.Event{e1, e2, e3, wrap} {
		MustSave(t, b, c, e)
	}
	count := func(what string, want int64, fs ...nostr.Filter) {
		t.Helper()
		n, err := b.Count(ctxb(), c, fs)
		if err != nil || n != want {
			t.Fatalf("%s: Count = %d, %v; want %d", what, n, err, want)
		}
	}
	count("search", 2, searchFilter(t, "lightning"))
	count("search limit ignored", 2, limited(searchFilter(t, "lightning"), 1))
	k := searchFilter(t, "lightning")
	k.Kinds = []int{1}
	count("search + kinds", 1, k)
	count("two filters, one event in both", 3, searchFilter(t, "lightning"), searchFilter(t, "zap"), nostr.Filter{IDs: []string{e3.ID}})
	count("gift wrap", 0, nostr.Filter{Kinds: []int{nostr.KindGiftWrap}, Search: "lightning"})
}

func testSearchIsolation(t *testing.T, b ChannelBackend) {
	ca := Community(t, b, "a.example")
	cb := Community(t, b, "b.example")
	a := NewAuthor(t)
	inA := a.Event(t, 1, base+1, "secret plans")
	// The same event in both communities is two events.
	shared := a.Event(t, 1, base+2, "secret shared")
	inB := a.Event(t, 1, base+3, "secret other")
	MustSave(t, b, ca, inA)
	MustSave(t, b, ca, shared)
	MustSave(t, b, cb, shared)
	MustSave(t, b, cb, inB)
	wantIDs(t, "A", QueryIDs(t, b, ca, searchFilter(t, "secret")), shared.ID, inA.ID)
	wantIDs(t, "B", QueryIDs(t, b, cb, searchFilter(t, "secret")), inB.ID, shared.ID)
	wantIDs(t, "B plans", QueryIDs(t, b, cb, searchFilter(t, "plans")))
	for _, r := range Collect(t, b.Query(ctxb(), cb, searchFilter(t, "secret"))) {
		if r.Community != cb {
			t.Fatalf("row of %v in a search of %v", r.Community, cb)
		}
	}
	if n, err := b.Count(ctxb(), cb, []nostr.Filter{searchFilter(t, "plans")}); err != nil || n != 0 {
		t.Fatalf("Count plans in B = %d, %v", n, err)
	}
}

func testSearchScope(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a := NewAuthor(t)
	open, private := NewChannelID(), NewChannelID()
	wide := a.Event(t, 1, base+1, "launch date")
	inOpen := a.Event(t, nostr.KindChatMessage, base+2, "launch party", hTag(open))
	inPrivate := a.Event(t, nostr.KindChatMessage, base+3, "launch secret launch", hTag(private))
	for _, e := range []*nostr.Event{wide, inOpen, inPrivate} {
		MustSave(t, b, c, e)
	}
	f := searchFilter(t, "launch")
	wantIDs(t, "scope open", scoped(t, b, c, f, channel.ScopeOf(open)), inOpen.ID, wide.ID)
	wantIDs(t, "scope none", scoped(t, b, c, f, channel.ScopeOf()), wide.ID)
	wantIDs(t, "scope both", scoped(t, b, c, f, channel.ScopeOf(open, private)), inPrivate.ID, inOpen.ID, wide.ID)
	wantIDs(t, "scope open limit 1", scoped(t, b, c, limited(f, 1), channel.ScopeOf(open)), inOpen.ID)
	n, err := b.CountScoped(ctxb(), c, []nostr.Filter{searchFilter(t, "secret")}, channel.ScopeOf(open))
	if err != nil || n != 0 {
		t.Fatalf("CountScoped secret outside the scope = %d, %v", n, err)
	}
	n, err = b.CountScoped(ctxb(), c, []nostr.Filter{f}, channel.ScopeOf(private))
	if err != nil || n != 2 {
		t.Fatalf("CountScoped launch in private = %d, %v; want 2", n, err)
	}
}

func testSearchDeleted(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a := NewAuthor(t)
	gone := a.Event(t, 1, base+1, "ephemeral thought")
	MustSave(t, b, c, gone)
	MustSave(t, b, c, a.Event(t, nostr.KindDeletion, base+2, "", nostr.Tag{"e", gone.ID}))
	old := a.Event(t, 0, base+3, `{"about":"old hobby: pottery"}`)
	cur := a.Event(t, 0, base+4, `{"about":"new hobby: sailing"}`)
	MustSave(t, b, c, old)
	MustSave(t, b, c, cur)
	wantIDs(t, "deleted", QueryIDs(t, b, c, searchFilter(t, "thought")))
	wantIDs(t, "replaced", QueryIDs(t, b, c, searchFilter(t, "pottery")))
	wantIDs(t, "current", QueryIDs(t, b, c, searchFilter(t, "hobby")), cur.ID)
}

func testSearchUnicode(t *testing.T, b ChannelBackend) {
	c := Community(t, b, "a.example")
	a := NewAuthor(t)
	e1 := a.Event(t, 1, base+1, "Ünïcode CAFÉ — déjà vu")
	e2 := a.Event(t, 1, base+2, "plain cafe")
	e3 := a.Event(t, 1, base+3, "Ελληνικά κείμενα και 日本語")
	for _, e := range []*nostr.Event{e1, e2, e3} {
		MustSave(t, b, c, e)
	}
	wantIDs(t, "café", QueryIDs(t, b, c, searchFilter(t, "café")), e1.ID)
	wantIDs(t, "cafe (diacritics kept)", QueryIDs(t, b, c, searchFilter(t, "CAFE")), e2.ID)
	wantIDs(t, "ünïcode", QueryIDs(t, b, c, searchFilter(t, "ÜNÏCODE")), e1.ID)
	wantIDs(t, "déjà vu", QueryIDs(t, b, c, searchFilter(t, `"déjà vu"`)), e1.ID)
	wantIDs(t, "greek", QueryIDs(t, b, c, searchFilter(t, "ΚΕΊΜΕΝΑ")), e3.ID)
	wantIDs(t, "japanese run", QueryIDs(t, b, c, searchFilter(t, "日本語")), e3.ID)
}
