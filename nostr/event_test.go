package nostr

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	gonostr "github.com/nbd-wtf/go-nostr"
)

const (
	hexA   = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hexB   = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	hexSig = hexA + hexB
)

// evJSON builds an event object from field JSON snippets; a snippet of ""
// leaves the field out.
func evJSON(id, pubkey, createdAt, kind, tags, content, sig string) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, `"`+k+`":`+v)
		}
	}
	add("id", id)
	add("pubkey", pubkey)
	add("created_at", createdAt)
	add("kind", kind)
	add("tags", tags)
	add("content", content)
	add("sig", sig)
	return "{" + strings.Join(parts, ",") + "}"
}

func validJSON() string {
	return evJSON(`"`+hexA+`"`, `"`+hexB+`"`, "1700000000", "1", `[["e","x"],["p","y","wss://r"]]`, `"hi"`, `"`+hexSig+`"`)
}

func TestParseEventValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Event
	}{
		{"canonical", validJSON(), Event{ID: hexA, PubKey: hexB, CreatedAt: 1700000000, Kind: 1,
			Tags: Tags{{"e", "x"}, {"p", "y", "wss://r"}}, Content: "hi", Sig: hexSig}},
		{"whitespace everywhere", " \n{ \"id\" : \"" + hexA + "\" ,\t\"pubkey\":\"" + hexB + "\",\r\"created_at\" : 0 , \"kind\" : 65535 , \"tags\" : [ [ \"a\" ] , [ ] ] , \"content\" : \"\" , \"sig\" : \"" + hexSig + "\" } \n",
			Event{ID: hexA, PubKey: hexB, CreatedAt: 0, Kind: 65535, Tags: Tags{{"a"}, {}}, Sig: hexSig}},
		{"reordered fields and unknown extras", `{"sig":"` + hexSig + `","extra":{"a":[1,2.5e3,true,null,"x\u0041"]},"content":"c","tags":[],"kind":0,"created_at":9223372036854775807,"pubkey":"` + hexB + `","id":"` + hexA + `","more":-1}`,
			Event{ID: hexA, PubKey: hexB, CreatedAt: 9223372036854775807, Kind: 0, Tags: Tags{}, Content: "c", Sig: hexSig}},
		{"escapes decoded", evJSON(`"`+hexA+`"`, `"`+hexB+`"`, "1", "1", `[["t","\u00e9\/\"\\"]]`, `"a\nb\tc\rd\be\ff\u0000g\ud83d\ude00\u2028"`, `"`+hexSig+`"`),
			Event{ID: hexA, PubKey: hexB, CreatedAt: 1, Kind: 1, Tags: Tags{{"t", "é/\"\\"}}, Content: "a\nb\tc\rd\be\ff\x00g😀\u2028", Sig: hexSig}},
		{"escaped key and escaped hex", `{"\u0069d":"\u0061` + hexA[1:] + `","pubkey":"` + hexB + `","created_at":1,"kind":1,"tags":[],"content":"","sig":"` + hexSig + `"}`,
			Event{ID: hexA, PubKey: hexB, CreatedAt: 1, Kind: 1, Tags: Tags{}, Sig: hexSig}},
		{"raw unicode kept", evJSON(`"`+hexA+`"`, `"`+hexB+`"`, "1", "1", `[]`, "\"日本語 \u2028\u2029 😀 \x7f\"", `"`+hexSig+`"`),
			Event{ID: hexA, PubKey: hexB, CreatedAt: 1, Kind: 1, Tags: Tags{}, Content: "日本語 \u2028\u2029 😀 \x7f", Sig: hexSig}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEvent([]byte(tc.in))
			if err != nil {
				t.Fatalf("ParseEvent: %v", err)
			}
			if err := sameEvent(got, &tc.want); err != nil {
				t.Fatalf("%v: got %+v", err, got)
			}
			ref, ok := refParseEvent([]byte(tc.in))
			if !ok {
				t.Fatal("reference decoder refused a valid event")
			}
			if err := sameEvent(got, ref); err != nil {
				t.Fatalf("differs from encoding/json: %v", err)
			}
		})
	}
}

func TestParseEventInvalid(t *testing.T) {
	id, pk, sig := `"`+hexA+`"`, `"`+hexB+`"`, `"`+hexSig+`"`
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty input", ``, "invalid: event must be a JSON object"},
		{"array", `[]`, "invalid: event must be a JSON object"},
		{"empty object", `{}`, "invalid: missing field id"},
		{"missing sig", evJSON(id, pk, "1", "1", "[]", `""`, ""), "invalid: missing field sig"},
		{"missing tags", evJSON(id, pk, "1", "1", "", `""`, sig), "invalid: missing field tags"},
		{"uppercase id", evJSON(`"`+strings.ToUpper(hexA)+`"`, pk, "1", "1", "[]", `""`, sig), "invalid: id must be 64 lowercase hex characters"},
		{"short id", evJSON(`"abc"`, pk, "1", "1", "[]", `""`, sig), "invalid: id must be 64 lowercase hex characters"},
		{"numeric id", evJSON(`12`, pk, "1", "1", "[]", `""`, sig), "invalid: id must be 64 lowercase hex characters"},
		{"bad pubkey", evJSON(id, `"`+hexA[:63]+`g"`, "1", "1", "[]", `""`, sig), "invalid: pubkey must be 64 lowercase hex characters"},
		{"short sig", evJSON(id, pk, "1", "1", "[]", `""`, `"`+hexA+`"`), "invalid: sig must be 128 lowercase hex characters"},
		{"negative created_at", evJSON(id, pk, "-1", "1", "[]", `""`, sig), "invalid: created_at must be a non-negative integer"},
		{"minus zero created_at", evJSON(id, pk, "-0", "1", "[]", `""`, sig), "invalid: created_at must be a non-negative integer"},
		{"float created_at", evJSON(id, pk, "1.5", "1", "[]", `""`, sig), "invalid: created_at must be a non-negative integer"},
		{"float zero created_at", evJSON(id, pk, "1.0", "1", "[]", `""`, sig), "invalid: created_at must be a non-negative integer"},
		{"exponent created_at", evJSON(id, pk, "1e9", "1", "[]", `""`, sig), "invalid: created_at must be a non-negative integer"},
		{"string created_at", evJSON(id, pk, `"1"`, "1", "[]", `""`, sig), "invalid: created_at must be a non-negative integer"},
		{"null created_at", evJSON(id, pk, `null`, "1", "[]", `""`, sig), "invalid: created_at must be a non-negative integer"},
		{"leading zero created_at", evJSON(id, pk, "01", "1", "[]", `""`, sig), "invalid: created_at must be a non-negative integer"},
		{"created_at beyond int64", evJSON(id, pk, "9223372036854775808", "1", "[]", `""`, sig), "invalid: created_at is too large"},
		{"huge created_at", evJSON(id, pk, strings.Repeat("9", 400), "1", "[]", `""`, sig), "invalid: created_at is too large"},
		{"kind too big", evJSON(id, pk, "1", "65536", "[]", `""`, sig), "invalid: kind must be an integer between 0 and 65535"},
		{"negative kind", evJSON(id, pk, "1", "-1", "[]", `""`, sig), "invalid: kind must be an integer between 0 and 65535"},
		{"float kind", evJSON(id, pk, "1", "1.0", "[]", `""`, sig), "invalid: kind must be an integer between 0 and 65535"},
		{"tags object", evJSON(id, pk, "1", "1", "{}", `""`, sig), "invalid: tags must be an array of arrays of strings"},
		{"tags null", evJSON(id, pk, "1", "1", "null", `""`, sig), "invalid: tags must be an array of arrays of strings"},
		{"tag not array", evJSON(id, pk, "1", "1", `["e"]`, `""`, sig), "invalid: tags must be an array of arrays of strings"},
		{"tag number element", evJSON(id, pk, "1", "1", `[["e",1]]`, `""`, sig), "invalid: tags must be an array of arrays of strings"},
		{"tag null element", evJSON(id, pk, "1", "1", `[["e",null]]`, `""`, sig), "invalid: tags must be an array of arrays of strings"},
		{"tag nested array", evJSON(id, pk, "1", "1", `[[["e"]]]`, `""`, sig), "invalid: tags must be an array of arrays of strings"},
		{"content number", evJSON(id, pk, "1", "1", "[]", `5`, sig), "invalid: content must be a string"},
		{"content null", evJSON(id, pk, "1", "1", "[]", `null`, sig), "invalid: content must be a string"},
		{"content raw newline", evJSON(id, pk, "1", "1", "[]", "\"a\nb\"", sig), "invalid: content contains an unescaped control character"},
		{"content bad escape", evJSON(id, pk, "1", "1", "[]", `"\x"`, sig), "invalid: content contains an invalid escape sequence"},
		{"content short unicode escape", evJSON(id, pk, "1", "1", "[]", `"\u12"`, sig), "invalid: content contains an invalid escape sequence"},
		{"lone high surrogate", evJSON(id, pk, "1", "1", "[]", `"\ud83d"`, sig), "invalid: content contains a lone UTF-16 surrogate escape"},
		{"lone low surrogate", evJSON(id, pk, "1", "1", "[]", `"\ude00"`, sig), "invalid: content contains a lone UTF-16 surrogate escape"},
		{"high surrogate then letter", evJSON(id, pk, "1", "1", "[]", `"\ud83dx"`, sig), "invalid: content contains a lone UTF-16 surrogate escape"},
		{"two high surrogates", evJSON(id, pk, "1", "1", "[]", `"\ud83d\ud83d"`, sig), "invalid: content contains a lone UTF-16 surrogate escape"},
		{"lone surrogate in tag", evJSON(id, pk, "1", "1", `[["t","\udfff"]]`, `""`, sig), "invalid: tag value contains a lone UTF-16 surrogate escape"},
		{"invalid utf8 content", evJSON(id, pk, "1", "1", "[]", "\"\xff\"", sig), "invalid: content contains invalid UTF-8"},
		{"utf8 encoded surrogate", evJSON(id, pk, "1", "1", "[]", "\"\xed\xa0\x80\"", sig), "invalid: content contains invalid UTF-8"},
		{"overlong utf8", evJSON(id, pk, "1", "1", "[]", "\"\xc0\xaf\"", sig), "invalid: content contains invalid UTF-8"},
		{"invalid utf8 in tag", evJSON(id, pk, "1", "1", "[[\"t\",\"\xfe\"]]", `""`, sig), "invalid: tag value contains invalid UTF-8"},
		{"unterminated content", `{"id":` + id + `,"content":"abc`, "invalid: content is an unterminated string"},
		{"duplicate id", `{"id":` + id + `,"id":` + id + `}`, "invalid: duplicate field id"},
		{"duplicate content", evJSON(id, pk, "1", "1", "[]", `""`, sig)[:len(evJSON(id, pk, "1", "1", "[]", `""`, sig))-1] + `,"content":"x"}`, "invalid: duplicate field content"},
		{"trailing data", validJSON() + `x`, "invalid: unexpected data after the event object"},
		{"two objects", validJSON() + validJSON(), "invalid: unexpected data after the event object"},
		{"trailing comma", validJSON()[:len(validJSON())-1] + `,}`, "invalid: malformed JSON"},
		{"missing colon", `{"id"` + id + `}`, "invalid: malformed JSON"},
		{"single quotes", `{'id':1}`, "invalid: malformed JSON"},
		{"bad unknown value", `{"x":tru}`, "invalid: malformed JSON"},
		{"bad unknown number", `{"x":01}`, "invalid: malformed JSON"},
		{"bad unknown number 2", `{"x":1.}`, "invalid: malformed JSON"},
		{"deep unknown value", `{"x":` + strings.Repeat("[", 100000) + `}`, "invalid: JSON nested too deeply"},
		{"unterminated object", `{"id":` + id, "invalid: malformed JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ParseEvent([]byte(tc.in))
			if err == nil {
				t.Fatalf("accepted: %+v", ev)
			}
			if err.Error() != tc.wantErr {
				t.Fatalf("error %q, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestEscapingEveryByte writes every ASCII byte (and a few unusual code
// points) through AppendString and checks the NIP-01 rules, JSON validity
// and the go-nostr canonical serialization.
func TestEscapingEveryByte(t *testing.T) {
	short := map[byte]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\t': `\t`, '\n': `\n`, '\f': `\f`, '\r': `\r`}
	for c := 0; c < 0x80; c++ {
		b := byte(c)
		got := string(AppendString(nil, string([]byte{b})))
		want := `"` + string([]byte{b}) + `"`
		if s, ok := short[b]; ok {
			want = `"` + s + `"`
		} else if b < 0x20 {
			want = fmt.Sprintf(`"\u%04x"`, b)
		}
		if got != want {
			t.Errorf("byte %#x: got %s, want %s", b, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != string([]byte{b}) {
			t.Errorf("byte %#x: %s does not decode back (%v)", b, got, err)
		}
	}
	for _, s := range []string{"\u2028", "\u2029", "😀", "é", "<>&", "\u00a0", "\ufeff", "\U0010ffff"} {
		if got := string(AppendString(nil, s)); got != `"`+s+`"` {
			t.Errorf("%q: got %s, want it verbatim", s, got)
		}
	}
}

// TestComputeIDMatchesGoNostr compares ComputeID with go-nostr's GetID, an
// independent implementation, over hand-picked and random events.
func TestComputeIDMatchesGoNostr(t *testing.T) {
	var all []string
	for c := 0; c < 0x80; c++ {
		all = append(all, string(rune(c)))
	}
	events := []Event{
		{PubKey: hexB, CreatedAt: 0, Kind: 0},
		{PubKey: hexB, CreatedAt: 1700000000, Kind: 1, Content: "hello"},
		{PubKey: hexB, CreatedAt: 1, Kind: 30023, Tags: Tags{{"d", "x"}, {}, {"e", "", ""}}, Content: strings.Join(all, "")},
		{PubKey: hexB, CreatedAt: 9223372036854775807, Kind: 65535, Tags: Tags{{"t", "\u2028\u2029😀é\x7f"}}, Content: "\\\"\x00\x1f"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		events = append(events, randomEvent(rng))
	}
	for i, e := range events {
		g := gonostr.Event{PubKey: e.PubKey, CreatedAt: gonostr.Timestamp(e.CreatedAt), Kind: e.Kind, Content: e.Content, Tags: gonostr.Tags{}}
		for _, tag := range e.Tags {
			g.Tags = append(g.Tags, gonostr.Tag(tag))
		}
		if got, want := e.ComputeID(), g.GetID(); got != want {
			t.Fatalf("event %d: ComputeID %s, go-nostr %s (%s)", i, got, want, e.AppendCanonical(nil))
		}
		if got, want := string(e.AppendCanonical(nil)), string(g.Serialize()); got != want {
			t.Fatalf("event %d: canonical form differs:\n%s\n%s", i, got, want)
		}
		e.ID = e.ComputeID()
		if !e.CheckID() {
			t.Fatalf("event %d: CheckID false after setting the computed id", i)
		}
		e.Content += "x"
		if e.CheckID() {
			t.Fatalf("event %d: CheckID true after changing content", i)
		}
	}
}

// TestNIP01KnownID pins one id computed by hand from the NIP-01 rules, so
// that a shared bug with the oracle cannot hide.
func TestNIP01KnownID(t *testing.T) {
	e := Event{PubKey: hexB, CreatedAt: 1, Kind: 1, Tags: Tags{{"t", "a\"b"}}, Content: "x\ny"}
	const canonical = `[0,"` + hexB + `",1,1,[["t","a\"b"]],"x\ny"]`
	if got := string(e.AppendCanonical(nil)); got != canonical {
		t.Fatalf("canonical %s, want %s", got, canonical)
	}
	// sha256 of the canonical string above, computed with `printf %s ... | sha256sum`.
	const want = "8d031702c5bba405c24d3112e4dd00216b45fd1f753a5c77d72491afad887918"
	if got := e.ComputeID(); got != want {
		t.Fatalf("ComputeID = %s, want %s", got, want)
	}
}

// randomEvent returns an event with adversarial strings.
func randomEvent(rng *rand.Rand) Event {
	e := Event{
		ID:        randHex(rng, 64),
		PubKey:    randHex(rng, 64),
		CreatedAt: rng.Int64N(2_000_000_000),
		Kind:      rng.IntN(MaxKind + 1),
		Content:   randString(rng, 40),
		Sig:       randHex(rng, 128),
	}
	for range rng.IntN(5) {
		tag := Tag{}
		for range rng.IntN(4) {
			tag = append(tag, randString(rng, 8))
		}
		e.Tags = append(e.Tags, tag)
	}
	return e
}

func randHex(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = hexDigits[rng.IntN(16)]
	}
	return string(b)
}

var funnyRunes = []rune{'"', '\\', '/', '\n', '\r', '\t', '\b', '\f', 0, 1, 0x1f, 0x7f, 0x80, 0xe9, 0x2028, 0x2029, 0xfeff, 0xfffd, 0x1f600, 0x10ffff, '<', '&', 'a', 'z', ' '}

func randString(rng *rand.Rand, max int) string {
	var sb strings.Builder
	for range rng.IntN(max + 1) {
		if rng.IntN(3) == 0 {
			sb.WriteRune(funnyRunes[rng.IntN(len(funnyRunes))])
		} else {
			sb.WriteRune(rune(rng.IntN(0x3000)))
		}
	}
	s := sb.String()
	if !utf8.ValidString(s) {
		panic("randString made invalid UTF-8")
	}
	return s
}

// TestRoundTrip checks that AppendJSON output parses back to the same event
// and re-encodes byte for byte, and that encoding/json reads it identically.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		e := randomEvent(rng)
		raw := e.AppendJSON(nil)
		got, err := ParseEvent(raw)
		if err != nil {
			t.Fatalf("event %d: %v\n%s", i, err, raw)
		}
		if err := sameEvent(got, &e); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if again := got.AppendJSON(nil); string(again) != string(raw) {
			t.Fatalf("event %d: not byte-for-byte:\n%s\n%s", i, raw, again)
		}
		ref, ok := refParseEvent(raw)
		if !ok {
			t.Fatalf("event %d: encoding/json refuses our output %s", i, raw)
		}
		if err := sameEvent(ref, &e); err != nil {
			t.Fatalf("event %d: encoding/json reads %v", i, err)
		}
		mj, _ := e.MarshalJSON()
		var u Event
		if err := json.Unmarshal(mj, &u); err != nil || sameEvent(&u, &e) != nil {
			t.Fatalf("event %d: MarshalJSON/UnmarshalJSON round trip failed: %v", i, err)
		}
	}
}

// TestParsedTagsDoNotAlias checks that appending to one parsed tag leaves
// its neighbour alone (they share a backing array).
func TestParsedTagsDoNotAlias(t *testing.T) {
	e, err := ParseEvent([]byte(validJSON()))
	if err != nil {
		t.Fatal(err)
	}
	e.Tags[0] = append(e.Tags[0], "extra")
	if e.Tags[1][0] != "p" || len(e.Tags[1]) != 3 {
		t.Fatalf("second tag clobbered: %q", e.Tags[1])
	}
}

func TestTagHelpers(t *testing.T) {
	e := &Event{PubKey: hexB, Kind: 30023, Tags: Tags{{"d"}, {"e", "1"}, {"d", "slug", "x"}, {"e", "2"}, {"expiration", "1700000000"}, {}}}
	if got := e.Tags.Find("e").Value(); got != "1" {
		t.Errorf("Find(e) = %q", got)
	}
	if got := e.Tags.Find("nope"); got != nil {
		t.Errorf("Find(nope) = %q", got)
	}
	if got := len(e.Tags.All("e")); got != 2 {
		t.Errorf("All(e) has %d tags", got)
	}
	if got := e.DTag(); got != "slug" {
		t.Errorf("DTag = %q (a d tag without value must be skipped)", got)
	}
	if got := e.Coordinate(); got != "30023:"+hexB+":slug" {
		t.Errorf("Coordinate = %q", got)
	}
	if ts, ok := e.Expiration(); !ok || ts != 1700000000 {
		t.Errorf("Expiration = %d %v", ts, ok)
	}
	if (Tag{}).Value() != "" || (Tag{"x"}).Value() != "" || (Tag{}).Name() != "" {
		t.Error("Value/Name of short tags must be empty")
	}
	for _, tc := range []struct {
		kind int
		want string
	}{{0, "0:" + hexB + ":"}, {3, "3:" + hexB + ":"}, {10002, "10002:" + hexB + ":"}, {30000, "30000:" + hexB + ":"}, {1, ""}, {20001, ""}} {
		if got := (&Event{PubKey: hexB, Kind: tc.kind}).Coordinate(); got != tc.want {
			t.Errorf("Coordinate(kind %d) = %q, want %q", tc.kind, got, tc.want)
		}
	}
	for _, v := range []string{"", "-1", "1.5", "1e3", " 1", "abc", "99999999999999999999", "+1"} {
		e := &Event{Tags: Tags{{"expiration", v}}}
		if ts, ok := e.Expiration(); ok {
			t.Errorf("Expiration(%q) = %d, want not ok", v, ts)
		}
	}
	if _, ok := (&Event{}).Expiration(); ok {
		t.Error("Expiration without tag must not be ok")
	}
}

func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		k               int
		eph, repl, addr bool
	}{
		{0, false, true, false}, {1, false, false, false}, {3, false, true, false},
		{9999, false, false, false}, {10000, false, true, false}, {19999, false, true, false},
		{20000, true, false, false}, {22242, true, false, false}, {29999, true, false, false},
		{30000, false, false, true}, {39999, false, false, true}, {40000, false, false, false},
	} {
		if IsEphemeral(tc.k) != tc.eph || IsReplaceable(tc.k) != tc.repl || IsAddressable(tc.k) != tc.addr {
			t.Errorf("kind %d: ephemeral %v replaceable %v addressable %v", tc.k, IsEphemeral(tc.k), IsReplaceable(tc.k), IsAddressable(tc.k))
		}
	}
}

func TestIsSearchable(t *testing.T) {
	if IsSearchable(KindGiftWrap) || !IsSearchable(KindNote) || !IsSearchable(KindChatMessage) {
		t.Fatal("only gift wraps are unsearchable")
	}
}

// TestAppendAllocatesOnce: writing an event's JSON or its canonical form
// into an empty buffer allocates once, whatever its tags and content.
func TestAppendAllocatesOnce(t *testing.T) {
	ev := &Event{ID: hexA, PubKey: hexB, CreatedAt: 1_700_000_000, Kind: 1, Sig: hexSig,
		Content: strings.Repeat("a note of some length ", 40)}
	for i := range 12 {
		ev.Tags = append(ev.Tags, Tag{"e", hexA, "wss://relay.example/" + strings.Repeat("x", i), "reply"})
	}
	// Escapes lengthen the output past the strings' lengths: a quote or
	// a newline by one byte. Ordinary text has a few.
	escaped := &Event{ID: hexA, PubKey: hexB, CreatedAt: 1_700_000_000, Kind: 1, Sig: hexSig,
		Content: strings.Repeat("a line of a \"quoted\" note, then a break\n", 30),
		Tags:    Tags{{"t", "new\nline"}, {"alt", "a \"quoted\" alt text"}}}
	raw := ev.AppendJSON(nil)
	for name, fn := range map[string]func(){
		"AppendJSON":                 func() { _ = ev.AppendJSON(nil) },
		"AppendCanonical":            func() { _ = ev.AppendCanonical(nil) },
		"AppendJSON, escaped":        func() { _ = escaped.AppendJSON(nil) },
		"AppendCanonical, escaped":   func() { _ = escaped.AppendCanonical(nil) },
		"AppendEventMessage":         func() { _ = AppendEventMessage(nil, "sub-1", raw) },
		"AppendEventMessage, quoted": func() { _ = AppendEventMessage(nil, "sub\"1\n", raw) },
	} {
		if n := testing.AllocsPerRun(50, fn); n != 1 {
			t.Errorf("%s: %v allocations, want 1", name, n)
		}
	}
}
