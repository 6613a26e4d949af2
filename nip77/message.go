package nip77

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/buzzrelay/buzz/nostr"
)

// Message labels (element 0 of every NIP-77 envelope).
const (
	LabelOpen  = "NEG-OPEN"
	LabelMsg   = "NEG-MSG"
	LabelClose = "NEG-CLOSE"
	LabelErr   = "NEG-ERR"
)

// Open is ["NEG-OPEN", <sub id>, <filter>, <initial message, hex>].
type Open struct {
	SubID   string
	Filter  nostr.Filter
	Message string
}

// Msg is ["NEG-MSG", <sub id>, <message, hex>].
type Msg struct {
	SubID   string
	Message string
}

// Close is ["NEG-CLOSE", <sub id>].
type Close struct {
	SubID string
}

// Err is ["NEG-ERR", <sub id>, <reason>], sent by a relay.
type Err struct {
	SubID  string
	Reason string
}

// ParseError is an invalid NEG-* message whose subscription id could be
// read (SubID, "" otherwise), so the relay can answer NEG-ERR. Error() is
// an "invalid: ..." text.
type ParseError struct {
	SubID string
	Err   error
}

func (e *ParseError) Error() string { return e.Err.Error() }
func (e *ParseError) Unwrap() error { return e.Err }

// IsClientMessage reports whether data is, by its label, a NEG-OPEN,
// NEG-MSG or NEG-CLOSE message: an array whose first element is one of
// those strings (whitespace allowed as JSON allows it). It reads no more
// than the label.
func IsClientMessage(data []byte) bool {
	l := label(data)
	return l == LabelOpen || l == LabelMsg || l == LabelClose
}

// label returns the label of a message that starts `[ "NEG-…"`, or "".
func label(data []byte) string {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '[' {
		return ""
	}
	i = skipWS(data, i+1)
	if i >= len(data) || data[i] != '"' {
		return ""
	}
	rest := data[i+1:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || end > len(LabelClose) {
		return ""
	}
	return string(rest[:end])
}

func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// ParseClientMessage decodes one NEG-OPEN (*Open), NEG-MSG (*Msg) or
// NEG-CLOSE (*Close) strictly: exactly the elements NIP-77 gives, a
// non-empty subscription id, one filter bounded by lim as a REQ's filters
// are (nostr.ParseFiltersLimited; a filter array is refused), and a
// message of lowercase or uppercase hex of even length. Any problem is an
// "invalid: ..." error, a *ParseError once the subscription id was read.
func ParseClientMessage(data []byte, lim nostr.FilterLimits) (any, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		return nil, errors.New("invalid: message must be a JSON array")
	}
	if len(elems) == 0 {
		return nil, errors.New("invalid: message must be a JSON array")
	}
	var lbl string
	if err := json.Unmarshal(elems[0], &lbl); err != nil {
		return nil, errors.New("invalid: message type must be a string")
	}
	want := map[string]int{LabelOpen: 4, LabelMsg: 3, LabelClose: 2}[lbl]
	if want == 0 {
		return nil, errors.New("invalid: unknown message type")
	}
	var sub string
	if len(elems) < 2 || json.Unmarshal(elems[1], &sub) != nil || sub == "" {
		return nil, fmt.Errorf("invalid: %s needs a non-empty subscription id", lbl)
	}
	fail := func(err error) (any, error) { return nil, &ParseError{SubID: sub, Err: err} }
	if len(elems) != want {
		return fail(fmt.Errorf("invalid: %s has %d elements, want %d", lbl, len(elems), want))
	}
	switch lbl {
	case LabelClose:
		return &Close{SubID: sub}, nil
	case LabelMsg:
		msg, err := hexElem(elems[2])
		if err != nil {
			return fail(err)
		}
		return &Msg{SubID: sub, Message: msg}, nil
	}
	raw := bytes.TrimSpace(elems[2])
	if len(raw) == 0 || raw[0] != '{' {
		return fail(errors.New("invalid: NEG-OPEN needs one filter object"))
	}
	lim.MaxFilters = 1
	filters, err := nostr.ParseFiltersLimited(raw, lim)
	if err != nil {
		return fail(err)
	}
	msg, err := hexElem(elems[3])
	if err != nil {
		return fail(err)
	}
	return &Open{SubID: sub, Filter: filters[0], Message: msg}, nil
}

// hexElem reads a JSON string of hex digits, of even length and at least
// one byte (the protocol version).
func hexElem(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errors.New("invalid: negentropy message must be a hex string")
	}
	if len(s) < 2 || len(s)%2 != 0 {
		return "", errors.New("invalid: negentropy message must be hex of even length")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", errors.New("invalid: negentropy message must be a hex string")
		}
	}
	return s, nil
}

// labelErrLong is how some relays spell NEG-ERR (go-nostr's envelopes,
// and so khatru, send "NEG-ERROR"); ParseRelayMessage reads both.
const labelErrLong = "NEG-ERROR"

// ParseRelayMessage decodes a NEG-MSG (*Msg) or NEG-ERR (*Err; also read
// as "NEG-ERROR") a relay sent; ok is false for any other message (EVENT,
// NOTICE, AUTH, …) or a malformed one.
func ParseRelayMessage(data []byte) (msg any, ok bool) {
	l := label(data)
	if l != LabelMsg && l != LabelErr && l != labelErrLong {
		return nil, false
	}
	var elems []string
	if err := json.Unmarshal(data, &elems); err != nil || len(elems) < 3 {
		return nil, false
	}
	if l != LabelMsg {
		return &Err{SubID: elems[1], Reason: elems[2]}, true
	}
	return &Msg{SubID: elems[1], Message: elems[2]}, true
}

// AppendOpen appends ["NEG-OPEN", subID, filter, msg]; filter is the
// filter's JSON object.
func AppendOpen(buf []byte, subID string, filter []byte, msg string) []byte {
	buf = append(buf, `["NEG-OPEN",`...)
	buf = appendJSONString(buf, subID)
	buf = append(buf, ',')
	buf = append(buf, filter...)
	buf = append(buf, ',', '"')
	buf = append(buf, msg...)
	return append(buf, '"', ']')
}

// AppendMsg appends ["NEG-MSG", subID, msg].
func AppendMsg(buf []byte, subID, msg string) []byte {
	buf = append(buf, `["NEG-MSG",`...)
	buf = appendJSONString(buf, subID)
	buf = append(buf, ',', '"')
	buf = append(buf, msg...)
	return append(buf, '"', ']')
}

// AppendErr appends ["NEG-ERR", subID, reason].
func AppendErr(buf []byte, subID, reason string) []byte {
	buf = append(buf, `["NEG-ERR",`...)
	buf = appendJSONString(buf, subID)
	buf = append(buf, ',')
	buf = appendJSONString(buf, reason)
	return append(buf, ']')
}

// AppendClose appends ["NEG-CLOSE", subID].
func AppendClose(buf []byte, subID string) []byte {
	buf = append(buf, `["NEG-CLOSE",`...)
	buf = appendJSONString(buf, subID)
	return append(buf, ']')
}

func appendJSONString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}
