package nostr

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseClientMessage(t *testing.T) {
	ev := validJSON()
	tests := []struct {
		name string
		in   string
		want ClientMessage
	}{
		{"event", `["EVENT",` + ev + `]`, &EventEnvelope{Event: mustParse(t, ev)}},
		{"event with whitespace", " [ \"EVENT\" , " + ev + " ] \n", &EventEnvelope{Event: mustParse(t, ev)}},
		{"auth", `["AUTH",` + ev + `]`, &AuthEnvelope{Event: mustParse(t, ev)}},
		{"req", `["REQ","sub 1",{"kinds":[1]},{"#e":["x"]}]`, &ReqEnvelope{SubID: "sub 1", Filters: []Filter{{Kinds: []int{1}}, {Tags: map[string][]string{"e": {"x"}}}}}},
		{"req empty filter", `["REQ","s",{}]`, &ReqEnvelope{SubID: "s", Filters: []Filter{{}}}},
		{"req escaped sub id", `["REQ","a\"b\u00e9",{}]`, &ReqEnvelope{SubID: "a\"bé", Filters: []Filter{{}}}},
		{"count", `["COUNT","c",{"authors":["` + hexB + `"]}]`, &CountEnvelope{SubID: "c", Filters: []Filter{{Authors: []string{hexB}}}}},
		{"close", `["CLOSE","s"]`, &CloseEnvelope{SubID: "s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseClientMessage([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v\nwant %#v", got, tc.want)
			}
			if got.Label() != tc.want.Label() {
				t.Fatal("label")
			}
		})
	}
}

func mustParse(t *testing.T, s string) *Event {
	t.Helper()
	e, err := ParseEvent([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestParseClientMessageInvalid(t *testing.T) {
	ev := validJSON()
	badEv := strings.Replace(ev, `"kind":1`, `"kind":"1"`, 1)
	tests := []struct {
		name, in, wantErr string
		env               *EnvelopeError // nil: not an EnvelopeError
	}{
		{"empty", ``, "invalid: message must be a JSON array", nil},
		{"object", `{}`, "invalid: message must be a JSON array", nil},
		{"empty array", `[]`, "invalid: message type must be a string", nil},
		{"numeric label", `[1]`, "invalid: message type must be a string", nil},
		{"unknown label", `["HELLO","x"]`, "invalid: unknown message type", nil},
		{"lowercase label", `["event",{}]`, "invalid: unknown message type", nil},
		{"relay-only label", `["EOSE","x"]`, "invalid: unknown message type", nil},
		{"event without object", `["EVENT"]`, "invalid: message must carry an event object", &EnvelopeError{Label: "EVENT"}},
		{"event bad kind", `["EVENT",` + badEv + `]`, "invalid: kind must be an integer between 0 and 65535", &EnvelopeError{Label: "EVENT", EventID: hexA}},
		{"event extra element", `["EVENT",` + ev + `,1]`, "invalid: too many elements in message", &EnvelopeError{Label: "EVENT", EventID: hexA}},
		{"event trailing", `["EVENT",` + ev + `]]`, "invalid: unexpected data after the message", &EnvelopeError{Label: "EVENT", EventID: hexA}},
		{"event unclosed", `["EVENT",` + ev, "invalid: malformed JSON", &EnvelopeError{Label: "EVENT", EventID: hexA}},
		{"event id after bad field", `["EVENT",{"kind":-1,"id":"` + hexA + `"}]`, "invalid: kind must be an integer between 0 and 65535", &EnvelopeError{Label: "EVENT", EventID: hexA}},
		{"event bad id", `["EVENT",{"id":"xyz"}]`, "invalid: id must be 64 lowercase hex characters", &EnvelopeError{Label: "EVENT"}},
		{"auth string", `["AUTH","challenge"]`, "invalid: event must be a JSON object", &EnvelopeError{Label: "AUTH"}},
		{"req no sub", `["REQ"]`, "invalid: subscription id must be a non-empty string", &EnvelopeError{Label: "REQ"}},
		{"req empty sub", `["REQ","",{}]`, "invalid: subscription id must be a non-empty string", &EnvelopeError{Label: "REQ"}},
		{"req numeric sub", `["REQ",1,{}]`, "invalid: subscription id must be a non-empty string", &EnvelopeError{Label: "REQ"}},
		{"req no filter", `["REQ","s"]`, "invalid: at least one filter is required", &EnvelopeError{Label: "REQ", SubID: "s"}},
		{"req bad filter", `["REQ","s",{"kinds":"x"}]`, "invalid: kinds must be an array of integers between 0 and 65535", &EnvelopeError{Label: "REQ", SubID: "s"}},
		{"req second filter bad", `["REQ","s",{},{"limit":-1}]`, "invalid: limit must be a non-negative integer", &EnvelopeError{Label: "REQ", SubID: "s"}},
		{"req filter array", `["REQ","s",[]]`, "invalid: filter must be a JSON object", &EnvelopeError{Label: "REQ", SubID: "s"}},
		{"req trailing", `["REQ","s",{}]x`, "invalid: unexpected data after the message", &EnvelopeError{Label: "REQ", SubID: "s"}},
		{"count empty search", `["COUNT","c",{"search":""}]`, "invalid: search query has no words to match", &EnvelopeError{Label: "COUNT", SubID: "c"}},
		{"close extra", `["CLOSE","s","t"]`, "invalid: too many elements in message", &EnvelopeError{Label: "CLOSE", SubID: "s"}},
		{"close no sub", `["CLOSE"]`, "invalid: subscription id must be a non-empty string", &EnvelopeError{Label: "CLOSE"}},
		{"deep garbage", `["EVENT",{"x":` + strings.Repeat(`{"a":`, 5000) + `}]`, "invalid: JSON nested too deeply", &EnvelopeError{Label: "EVENT"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseClientMessage([]byte(tc.in))
			if err == nil {
				t.Fatalf("accepted: %#v", m)
			}
			if err.Error() != tc.wantErr {
				t.Fatalf("error %q, want %q", err, tc.wantErr)
			}
			var ee *EnvelopeError
			isEnv := errors.As(err, &ee)
			if isEnv != (tc.env != nil) {
				t.Fatalf("EnvelopeError = %v, want %v", isEnv, tc.env != nil)
			}
			if isEnv && (ee.Label != tc.env.Label || ee.SubID != tc.env.SubID || ee.EventID != tc.env.EventID) {
				t.Fatalf("EnvelopeError %+v, want %+v", ee, tc.env)
			}
		})
	}
}

// TestRelayWriters pins the exact bytes of every relay→client writer and
// checks ParseRelayMessage reads them back.
func TestRelayWriters(t *testing.T) {
	e := mustParse(t, validJSON())
	raw := e.AppendJSON(nil)
	tests := []struct {
		name string
		out  []byte
		want string
		msg  RelayMessage
	}{
		{"ok true", AppendOK(nil, hexA, true, ""), `["OK","` + hexA + `",true,""]`, &OKMessage{EventID: hexA, OK: true}},
		{"ok false", AppendOK(nil, hexA, false, "invalid: \"bad\"\n"), `["OK","` + hexA + `",false,"invalid: \"bad\"\n"]`, &OKMessage{EventID: hexA, Message: "invalid: \"bad\"\n"}},
		{"eose", AppendEOSE(nil, "s\u2028"), "[\"EOSE\",\"s\u2028\"]", &EOSEMessage{SubID: "s\u2028"}},
		{"closed", AppendClosed(nil, "s", "auth-required: x"), `["CLOSED","s","auth-required: x"]`, &ClosedMessage{SubID: "s", Message: "auth-required: x"}},
		{"notice", AppendNotice(nil, "<b>&"), `["NOTICE","<b>&"]`, &NoticeMessage{Message: "<b>&"}},
		{"auth", AppendAuthChallenge(nil, "chal"), `["AUTH","chal"]`, &AuthChallengeMessage{Challenge: "chal"}},
		{"count", AppendCountResult(nil, "c", 42), `["COUNT","c",{"count":42}]`, &CountMessage{SubID: "c", Count: 42}},
		{"event", AppendEventMessage(nil, "s", raw), `["EVENT","s",` + string(raw) + `]`, &EventMessage{SubID: "s", Event: e, Raw: raw}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if string(tc.out) != tc.want {
				t.Fatalf("wrote %s\nwant  %s", tc.out, tc.want)
			}
			if !json.Valid(tc.out) {
				t.Fatal("not valid JSON")
			}
			got, err := ParseRelayMessage(tc.out)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.msg) {
				t.Fatalf("parsed %#v\nwant %#v", got, tc.msg)
			}
		})
	}
	// Appending keeps what dst held.
	if got := string(AppendEOSE([]byte("x"), "s")); got != `x["EOSE","s"]` {
		t.Fatalf("AppendEOSE on non-empty dst: %s", got)
	}
}

func TestParseRelayMessageMore(t *testing.T) {
	ok := []struct {
		in   string
		want RelayMessage
	}{
		{`["COUNT","c",{"count":7,"approximate":true,"x":[1]}]`, &CountMessage{SubID: "c", Count: 7, Approximate: true}},
		{` [ "OK" , "` + hexA + `" , false , "" ] `, &OKMessage{EventID: hexA}},
	}
	for _, tc := range ok {
		got, err := ParseRelayMessage([]byte(tc.in))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v, %v", tc.in, got, err)
		}
	}
	for _, in := range []string{
		``, `{}`, `["NOPE"]`, `["OK","x",1,""]`, `["OK","x",true]`, `["EOSE"]`, `["EOSE","s",1]`,
		`["COUNT","c",{}]`, `["COUNT","c",{"count":-1}]`, `["COUNT","c",{"count":1.5}]`, `["COUNT","c",{"count":1,"count":2}]`,
		`["EVENT","s",{}]`, `["EVENT","s"]`, `["NOTICE",null]`, `["AUTH",{}]`, `["CLOSED","s"]`,
	} {
		if m, err := ParseRelayMessage([]byte(in)); err == nil || !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Errorf("%s: accepted %#v / %v", in, m, err)
		}
	}
}

// TestClientWriters checks the client→relay writers against
// ParseClientMessage.
func TestClientWriters(t *testing.T) {
	e := mustParse(t, validJSON())
	raw := e.AppendJSON(nil)
	filters := []Filter{{Kinds: []int{1}, Limit: 0, LimitSet: true}, {Tags: map[string][]string{"d": {"x"}}, Since: i64(3)}}
	tests := []struct {
		out  []byte
		want ClientMessage
	}{
		{AppendEventEnvelope(nil, raw), &EventEnvelope{Event: e}},
		{AppendAuth(nil, raw), &AuthEnvelope{Event: e}},
		{AppendReq(nil, "sub", filters...), &ReqEnvelope{SubID: "sub", Filters: filters}},
		{AppendCount(nil, "cnt", filters[0]), &CountEnvelope{SubID: "cnt", Filters: filters[:1]}},
		{AppendClose(nil, "sub\n"), &CloseEnvelope{SubID: "sub\n"}},
	}
	for _, tc := range tests {
		got, err := ParseClientMessage(tc.out)
		if err != nil {
			t.Fatalf("%s: %v", tc.out, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%s: parsed %#v, want %#v", tc.out, got, tc.want)
		}
	}
	if got := string(AppendReq(nil, "s", Filter{})); got != `["REQ","s",{}]` {
		t.Fatalf("AppendReq = %s", got)
	}
}

func TestParseClientMessageLimited(t *testing.T) {
	lim := FilterLimits{MaxFilters: 10, MaxValues: 5, MaxBytes: 200}
	many := `["REQ","s"` + strings.Repeat(`,{}`, 174_000) + `]`
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"filters", many, "invalid: too many filters (limit 10)"},
		{"kinds", `["REQ","s",{"kinds":[1,2,3,4,5,6]}]`, "invalid: too many values in kinds (limit 5)"},
		{"authors", `["COUNT","s",{"authors":["` + strings.Repeat("a", 64) + `"` + strings.Repeat(`,"`+strings.Repeat("b", 64)+`"`, 5) + `]}]`, "invalid: too many values in authors (limit 5)"},
		{"tag", `["REQ","s",{"#t":["a","b","c","d","e","f"]}]`, "invalid: too many values in #t (limit 5)"},
		{"bytes", `["REQ","s",{"#t":["` + strings.Repeat("x", 100) + `"]},{"#t":["` + strings.Repeat("y", 100) + `"]}]`, "invalid: filters too large (limit 200 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseClientMessageLimited([]byte(tc.msg), lim)
			var ee *EnvelopeError
			if !errors.As(err, &ee) || ee.SubID != "s" || err.Error() != tc.want {
				t.Fatalf("got %v, want %q for sub s", err, tc.want)
			}
		})
	}
	ok := `["REQ","s",{"kinds":[1,2,3,4,5],"#t":["a","b","c","d","e"]}]`
	if _, err := ParseClientMessageLimited([]byte(ok), lim); err != nil {
		t.Fatalf("within limits: %v", err)
	}
}

// BenchmarkRefuseManyFilters measures refusing a REQ of 174,000 filters
// with a limit of 10: the cost is that of reading ten, not all of them.
func BenchmarkRefuseManyFilters(b *testing.B) {
	msg := []byte(`["REQ","s"` + strings.Repeat(`,{}`, 174_000) + `]`)
	lim := FilterLimits{MaxFilters: 10}
	for b.Loop() {
		if _, err := ParseClientMessageLimited(msg, lim); err == nil {
			b.Fatal("accepted")
		}
	}
}
