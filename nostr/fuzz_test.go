package nostr

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// Seed inputs shared by the fuzz targets (the committed corpora under
// testdata/fuzz/ add more).
func fuzzEventSeeds() []string {
	return []string{
		validJSON(),
		evJSON(`"`+hexA+`"`, `"`+hexB+`"`, "0", "65535", `[[],["a"],["b","\u00e9\ud83d\ude00"]]`, `"\n\t\r\b\f\u0000\u001f\"\\\/ \u2028"`, `"`+hexSig+`"`),
		`{"id":"` + hexA + `","x":{"y":[1,-2.5e+3,true,false,null,"s"]}}`,
		`{"content":"\ud800"}`,
		`{"kind":1e2}`,
		"{\"content\":\"\xff\"}",
		`{"created_at":99999999999999999999}`,
		`[` + validJSON() + `]`,
		validJSON() + " ",
		`{"tags":[["a",1]]}`,
	}
}

// FuzzParseEvent checks that ParseEvent never panics, refuses with an
// "invalid: " error, agrees with the encoding/json reference decoder, and
// that what it accepts survives AppendJSON → ParseEvent byte for byte.
func FuzzParseEvent(f *testing.F) {
	for _, s := range fuzzEventSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := ParseEvent(data)
		ref, refOK := refParseEvent(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			if refOK && !strings.Contains(err.Error(), "surrogate") && !strings.Contains(err.Error(), "nested too deeply") {
				t.Fatalf("refused what encoding/json accepts: %v", err)
			}
			return
		}
		if !refOK {
			t.Fatalf("accepted what the encoding/json reference refuses: %s", data)
		}
		if err := sameEvent(ev, ref); err != nil {
			t.Fatalf("differs from encoding/json: %v", err)
		}
		raw := ev.AppendJSON(nil)
		if !json.Valid(raw) {
			t.Fatalf("AppendJSON wrote invalid JSON: %s", raw)
		}
		back, err := ParseEvent(raw)
		if err != nil {
			t.Fatalf("own output refused: %v\n%s", err, raw)
		}
		if err := sameEvent(back, ev); err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if again := back.AppendJSON(nil); !bytes.Equal(again, raw) {
			t.Fatalf("not byte-for-byte:\n%s\n%s", raw, again)
		}
		canon := ev.AppendCanonical(nil)
		var arr []any
		if err := json.Unmarshal(canon, &arr); err != nil || len(arr) != 6 {
			t.Fatalf("canonical form is not a 6-element JSON array: %s", canon)
		}
	})
}

// FuzzParseFilter checks that ParseFilter never panics, refuses with an
// "invalid: " error, only accepts valid JSON whose members encoding/json
// reads the same way, and round-trips through AppendJSON.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"ids":["` + hexA + `"],"authors":[],"kinds":[0,65535],"#e":["x"],"#Z":[],"since":0,"until":1,"limit":0}`,
		`{"search":"x"}`, `{"#ab":[]}`, `{"limit":99999999999999999999999}`, `{"kinds":[1.0]}`, `{"#e":["\ud800"]}`,
		`{"kinds":[1],"kinds":[1]}`, ` {"until" : 5 } `, `{"#e":["a"],"#e":["b"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		flt, err := ParseFilter(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON: %s", data)
		}
		members, ok := refObject(data)
		if !ok {
			t.Fatalf("accepted what encoding/json sees as a non-object or duplicate keys: %s", data)
		}
		out := flt.AppendJSON(nil)
		outMembers, ok := refObject(out)
		if !ok {
			t.Fatalf("AppendJSON wrote bad JSON: %s", out)
		}
		if len(members) != len(outMembers) {
			t.Fatalf("members differ: %s vs %s", data, out)
		}
		for k, in := range members {
			if err := sameJSONValue(in, outMembers[k]); err != nil {
				t.Fatalf("member %q: %v (%s vs %s)", k, err, in, outMembers[k])
			}
		}
		back, err := ParseFilter(out)
		if err != nil || !reflect.DeepEqual(back, flt) {
			t.Fatalf("round trip: %v\n%s", err, out)
		}
	})
}

// sameJSONValue compares two JSON values as encoding/json decodes them,
// except that integers beyond int64 are allowed to have been saturated.
func sameJSONValue(a, b json.RawMessage) error {
	var va, vb any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return errors.New("undecodable")
	}
	if na, ok := va.(json.Number); ok && len(na) > 18 {
		return nil
	}
	if !reflect.DeepEqual(va, vb) {
		return errors.New("values differ")
	}
	return nil
}

// FuzzParseClientMessage checks that ParseClientMessage never panics,
// refuses with an "invalid: " error, only accepts valid JSON, agrees with
// ParseEvent on the embedded event, and that the client writers reproduce
// what it parsed.
func FuzzParseClientMessage(f *testing.F) {
	for _, s := range fuzzEventSeeds()[:3] {
		f.Add([]byte(`["EVENT",` + s + `]`))
		f.Add([]byte(`["AUTH",` + s + `]`))
	}
	for _, s := range []string{
		`["REQ","s",{}]`, `["REQ","s",{"kinds":[1]},{"#e":["x"],"limit":5}]`, `["COUNT","c",{"authors":["` + hexB + `"]}]`,
		`["CLOSE","s"]`, `["REQ",""]`, `["NOPE"]`, `[]`, `["EVENT",{"kind":-1,"id":"` + hexA + `"}]`, `["REQ","s",{"x":1}]`,
		`["REQ","s",{},{},{}]`, `["COUNT","s",{"kinds":[1,2,3,4]}]`, `["REQ","s",{"#t":["a","b","c","d"]}]`,
		`["REQ","s",{"#e":["` + hexA + `"],"#p":["` + hexB + `"]}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseClientMessage(data)
		checkLimitedParse(t, data, m, err)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			var ee *EnvelopeError
			if errors.As(err, &ee) {
				if ee.EventID != "" && !IsLowerHex(ee.EventID, 64) {
					t.Fatalf("EnvelopeError.EventID %q is not an id", ee.EventID)
				}
				if ee.Label == "" {
					t.Fatal("EnvelopeError without label")
				}
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON: %s", data)
		}
		var out []byte
		switch m := m.(type) {
		case *EventEnvelope:
			checkEmbeddedEvent(t, data, m.Event)
			out = AppendEventEnvelope(nil, m.Event.AppendJSON(nil))
		case *AuthEnvelope:
			checkEmbeddedEvent(t, data, m.Event)
			out = AppendAuth(nil, m.Event.AppendJSON(nil))
		case *ReqEnvelope:
			if m.SubID == "" || len(m.Filters) == 0 {
				t.Fatal("REQ without sub id or filters")
			}
			out = AppendReq(nil, m.SubID, m.Filters...)
		case *CountEnvelope:
			if m.SubID == "" || len(m.Filters) == 0 {
				t.Fatal("COUNT without sub id or filters")
			}
			out = AppendCount(nil, m.SubID, m.Filters...)
		case *CloseEnvelope:
			out = AppendClose(nil, m.SubID)
		default:
			t.Fatalf("unexpected message type %T", m)
		}
		back, err := ParseClientMessage(out)
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Fatalf("writer round trip: %v\n%s", err, out)
		}
	})
}

// fuzzLimits are small enough for fuzzed messages to exceed them.
var fuzzLimits = FilterLimits{MaxFilters: 2, MaxValues: 3, MaxBytes: 96}

// checkLimitedParse checks ParseClientMessageLimited against the unlimited
// parse (m, err) of data: a message within the limits parses identically,
// one beyond them is refused with the subscription id, and nothing the
// unlimited parser refuses is accepted.
func checkLimitedParse(t *testing.T, data []byte, m ClientMessage, err error) {
	t.Helper()
	lm, lerr := ParseClientMessageLimited(data, fuzzLimits)
	if err != nil {
		if lerr == nil {
			t.Fatalf("limited parse accepted what the unlimited one refuses: %v", err)
		}
		return
	}
	var filters []Filter
	switch m := m.(type) {
	case *ReqEnvelope:
		filters = m.Filters
	case *CountEnvelope:
		filters = m.Filters
	}
	if lerr == nil {
		if !reflect.DeepEqual(lm, m) {
			t.Fatal("limited parse differs from the unlimited one")
		}
		if len(filters) > fuzzLimits.MaxFilters {
			t.Fatalf("limited parse accepted %d filters", len(filters))
		}
		for _, f := range filters {
			n := max(len(f.IDs), len(f.Authors), len(f.Kinds))
			for _, v := range f.Tags {
				n = max(n, len(v))
			}
			if n > fuzzLimits.MaxValues {
				t.Fatalf("limited parse accepted %d values in a field", n)
			}
		}
		return
	}
	if filters == nil {
		t.Fatalf("limited parse refused a message without filters: %v", lerr)
	}
	var ee *EnvelopeError
	if !errors.As(lerr, &ee) || ee.SubID == "" {
		t.Fatalf("limit error without the subscription id: %v", lerr)
	}
	msg := lerr.Error()
	if !strings.HasPrefix(msg, "invalid: too many filters") && !strings.HasPrefix(msg, "invalid: too many values in ") &&
		!strings.HasPrefix(msg, "invalid: filters too large") {
		t.Fatalf("limited parse refused with a non-limit error: %v", lerr)
	}
}

// checkEmbeddedEvent compares the event parsed from an envelope with
// ParseEvent and the reference decoder applied to the array's element 1.
func checkEmbeddedEvent(t *testing.T, data []byte, ev *Event) {
	t.Helper()
	var arr []json.RawMessage
	if err := json.Unmarshal(data, &arr); err != nil || len(arr) != 2 {
		t.Fatalf("accepted envelope is not a 2-element array: %s", data)
	}
	direct, err := ParseEvent(arr[1])
	if err != nil {
		t.Fatalf("envelope accepted an event ParseEvent refuses: %v", err)
	}
	if err := sameEvent(direct, ev); err != nil {
		t.Fatalf("envelope event differs from ParseEvent: %v", err)
	}
	ref, ok := refParseEvent(arr[1])
	if !ok || sameEvent(ref, ev) != nil {
		t.Fatal("envelope event differs from the encoding/json reference")
	}
}

// FuzzParseRelayMessage checks that ParseRelayMessage never panics, refuses
// with an "invalid: " error, only accepts valid JSON, and that the relay
// writers reproduce what it parsed.
func FuzzParseRelayMessage(f *testing.F) {
	e, err := ParseEvent([]byte(validJSON()))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][]byte{
		AppendOK(nil, hexA, true, "duplicate: x"), AppendEOSE(nil, "s"), AppendClosed(nil, "s", "m"),
		AppendNotice(nil, "n"), AppendAuthChallenge(nil, "c"), AppendCountResult(nil, "c", 3),
		AppendEventMessage(nil, "s", e.AppendJSON(nil)), []byte(`["COUNT","c",{"count":1,"approximate":false}]`),
		[]byte(`["OK","x",maybe,""]`),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseRelayMessage(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "invalid: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON: %s", data)
		}
		var out []byte
		switch m := m.(type) {
		case *EventMessage:
			if _, err := ParseEvent(m.Raw); err != nil {
				t.Fatalf("Raw is not the event: %v", err)
			}
			out = AppendEventMessage(nil, m.SubID, m.Event.AppendJSON(nil))
			m.Raw = m.Event.AppendJSON(nil)
		case *OKMessage:
			out = AppendOK(nil, m.EventID, m.OK, m.Message)
		case *EOSEMessage:
			out = AppendEOSE(nil, m.SubID)
		case *ClosedMessage:
			out = AppendClosed(nil, m.SubID, m.Message)
		case *NoticeMessage:
			out = AppendNotice(nil, m.Message)
		case *AuthChallengeMessage:
			out = AppendAuthChallenge(nil, m.Challenge)
		case *CountMessage:
			out = AppendCountResult(nil, m.SubID, m.Count)
			m.Approximate = false
		default:
			t.Fatalf("unexpected message type %T", m)
		}
		back, err := ParseRelayMessage(out)
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Fatalf("writer round trip: %v\n%s", err, out)
		}
	})
}

// FuzzParseFiltersLimited checks that the HTTP read body's parser
// (ParseFiltersLimited: a filter or an array of filters) never panics,
// refuses with an "invalid: " error, and accepts and refuses exactly what
// the REQ parser (ParseClientMessageLimited) does for the same filters
// under the same limits, with the same message for every limit exceeded.
func FuzzParseFiltersLimited(f *testing.F) {
	for _, s := range []string{
		`{}`, `[{}]`, `[]`, ` [ {"kinds":[1,2,3]} , {"authors":["` + hexA + `"]} ] `, `{"#t":["a","b","c","d"]}`,
		`[{},{},{},{}]`, `{"kinds":[1]} x`, `[{"#e":["x"]},]`, `[{"search":"hello world"}]`, `{"ids":["` + hexB + `","` + hexA + `"]}`,
	} {
		f.Add([]byte(s), uint8(3), uint8(3), uint16(40))
	}
	f.Fuzz(func(t *testing.T, data []byte, maxFilters, maxValues uint8, maxBytes uint16) {
		lim := FilterLimits{MaxFilters: int(maxFilters), MaxValues: int(maxValues), MaxBytes: int(maxBytes)}
		got, err := ParseFiltersLimited(data, lim)
		if err != nil && !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Fatalf("error without prefix: %v", err)
		}
		trimmed := strings.TrimLeft(string(data), " \t\r\n")
		var msg string
		reqLim := lim
		switch {
		case strings.HasPrefix(trimmed, "["):
			// `,` then the rest: a REQ counts its filters' bytes from the
			// comma, as ParseFiltersLimited counts from the bracket.
			msg = `["REQ","s",` + trimmed[1:]
			if strings.HasPrefix(strings.TrimLeft(trimmed[1:], " \t\r\n"), "]") {
				if err == nil {
					t.Fatalf("accepted an empty array: %s", data)
				}
				return
			}
		default:
			if err != nil && !isLimitErr(err) {
				// Past a bare object, the REQ form would read what follows
				// as more filters: only acceptance and limits compare.
				return
			}
			msg = `["REQ","s",` + trimmed + `]`
			if reqLim.MaxBytes > 0 {
				reqLim.MaxBytes++ // the REQ's leading comma
			}
		}
		m, reqErr := ParseClientMessageLimited([]byte(msg), reqLim)
		if (err == nil) != (reqErr == nil) {
			// The REQ form of a bare object with trailing data may differ
			// in what it sees as trailing: only a limit must agree.
			if !strings.HasPrefix(trimmed, "[") && !isLimitErr(err) && !isLimitErr(reqErr) {
				return
			}
			t.Fatalf("HTTP %v, REQ %v: %s", err, reqErr, data)
		}
		if err != nil {
			if isLimitErr(err) || isLimitErr(reqErr) {
				var ee *EnvelopeError
				if !errors.As(reqErr, &ee) {
					t.Fatalf("REQ error %T: %v", reqErr, reqErr)
				}
				if reqLim != lim && strings.Contains(err.Error(), "too large") && strings.Contains(ee.Err.Error(), "too large") {
					return // the same bound, written with the REQ's extra byte
				}
				if ee.Err.Error() != err.Error() {
					t.Fatalf("HTTP %v, REQ %v: %s", err, reqErr, data)
				}
			}
			return
		}
		if want := m.(*ReqEnvelope).Filters; !reflect.DeepEqual(got, want) {
			t.Fatalf("filters differ: %+v vs %+v", got, want)
		}
	})
}

func isLimitErr(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "too many filters") || strings.Contains(s, "too many values") || strings.Contains(s, "too large")
}

// FuzzEventContent checks that EventContent never panics, refuses with an
// "invalid: " error, returns ParseEvent's content wherever ParseEvent
// accepts, and never returns a string that shares data's memory.
func FuzzEventContent(f *testing.F) {
	for _, s := range fuzzEventSeeds() {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"content":"a","content":"b"}`))
	f.Add([]byte(`{"content":"x",}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		content, err := EventContent(data)
		if err != nil && !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Fatalf("EventContent(%q) error %q lacks the invalid: prefix", data, err)
		}
		if err == nil && len(content) > 0 && len(data) > 0 {
			p := uintptr(unsafe.Pointer(unsafe.StringData(content)))
			lo := uintptr(unsafe.Pointer(&data[0]))
			if p >= lo && p < lo+uintptr(len(data)) {
				t.Fatalf("EventContent(%q) shares data's memory", data)
			}
		}
		ev, perr := ParseEvent(data)
		if perr != nil {
			return
		}
		if err != nil || content != ev.Content {
			t.Fatalf("EventContent(%q) = %q, %v; ParseEvent's content is %q", data, content, err, ev.Content)
		}
	})
}
