package nostr

import (
	"errors"
	"fmt"
	"strconv"
)

// Message labels (element 0 of every envelope).
const (
	LabelEvent  = "EVENT"
	LabelReq    = "REQ"
	LabelCount  = "COUNT"
	LabelClose  = "CLOSE"
	LabelAuth   = "AUTH"
	LabelOK     = "OK"
	LabelEOSE   = "EOSE"
	LabelClosed = "CLOSED"
	LabelNotice = "NOTICE"
)

// ClientMessage is a message a client sends to a relay: *EventEnvelope,
// *ReqEnvelope, *CountEnvelope, *CloseEnvelope or *AuthEnvelope.
type ClientMessage interface {
	Label() string
}

// EventEnvelope is ["EVENT", <event>] (NIP-01).
type EventEnvelope struct{ Event *Event }

// ReqEnvelope is ["REQ", <sub id>, <filter>...] (NIP-01).
type ReqEnvelope struct {
	SubID   string
	Filters []Filter
}

// CountEnvelope is ["COUNT", <sub id>, <filter>...] (NIP-45).
type CountEnvelope struct {
	SubID   string
	Filters []Filter
}

// CloseEnvelope is ["CLOSE", <sub id>] (NIP-01).
type CloseEnvelope struct{ SubID string }

// AuthEnvelope is ["AUTH", <signed kind-22242 event>] (NIP-42).
type AuthEnvelope struct{ Event *Event }

func (*EventEnvelope) Label() string { return LabelEvent }
func (*ReqEnvelope) Label() string   { return LabelReq }
func (*CountEnvelope) Label() string { return LabelCount }
func (*CloseEnvelope) Label() string { return LabelClose }
func (*AuthEnvelope) Label() string  { return LabelAuth }

// EnvelopeError is returned by ParseClientMessage once the label is known,
// carrying what the relay needs to answer properly:
//   - for REQ and COUNT, SubID is set when the subscription id was read, so
//     the relay can reply ["CLOSED", SubID, Err] (or a COUNT CLOSED);
//   - for EVENT and AUTH, EventID is set when the object's top-level "id" is
//     64 lowercase hex, so the relay can reply ["OK", EventID, false, Err].
//
// Error() is Err's text, which starts with "invalid: ". Use errors.As to get
// at the fields.
type EnvelopeError struct {
	Label   string
	SubID   string
	EventID string
	Err     error
}

func (e *EnvelopeError) Error() string { return e.Err.Error() }
func (e *EnvelopeError) Unwrap() error { return e.Err }

var (
	errNotArray      = errors.New("invalid: message must be a JSON array")
	errUnknownLabel  = errors.New("invalid: unknown message type")
	errSubID         = errors.New("invalid: subscription id must be a non-empty string")
	errTrailing      = errors.New("invalid: unexpected data after the message")
	errNeedFilter    = errors.New("invalid: at least one filter is required")
	errExtraElements = errors.New("invalid: too many elements in message")
)

// ParseClientMessage decodes one client→relay message strictly. An unknown
// label gives "invalid: unknown message type"; any other problem an
// "invalid: ..." error, wrapped in an *EnvelopeError once the label is known.
// REQ and COUNT need at least one filter. Subscription ids must be non-empty
// strings; their length limit is the relay's business. The EVENT and AUTH
// paths use the same strict scanner as ParseEvent.
func ParseClientMessage(data []byte) (ClientMessage, error) {
	return ParseClientMessageLimited(data, FilterLimits{})
}

// FilterLimits bounds the filters of a REQ or COUNT while they are parsed:
// parsing stops at the first limit exceeded, so the cost of refusing an
// oversized request does not grow with its size. A zero field is no limit.
type FilterLimits struct {
	// MaxFilters is the number of filters per message.
	MaxFilters int
	// MaxValues is the number of values of one filter field: ids, authors,
	// kinds, and each tag ("#e", "#p", …) separately.
	MaxValues int
	// MaxBytes is the size of all the message's filters together, in bytes
	// of JSON as received.
	MaxBytes int
}

// ParseClientMessageLimited is ParseClientMessage with the filters of REQ
// and COUNT bounded by lim. A limit exceeded gives an *EnvelopeError
// carrying the subscription id, whose text is one of
//
//	invalid: too many filters (limit N)
//	invalid: too many values in <field> (limit N)
//	invalid: filters too large (limit N bytes)
func ParseClientMessageLimited(data []byte, lim FilterLimits) (ClientMessage, error) {
	p := scanner{s: string(data), maxValues: lim.MaxValues}
	if !p.consume('[') {
		return nil, errNotArray
	}
	label, se := p.readString()
	if se != strOK {
		return nil, errors.New("invalid: message type must be a string")
	}
	switch label {
	case LabelEvent, LabelAuth:
		ev, err := p.envelopeEvent()
		if err != nil {
			return nil, &EnvelopeError{Label: label, EventID: bestEffortID(data), Err: err}
		}
		if label == LabelEvent {
			return &EventEnvelope{Event: ev}, nil
		}
		return &AuthEnvelope{Event: ev}, nil
	case LabelReq, LabelCount:
		sub, filters, err := p.subAndFilters(lim)
		if err != nil {
			return nil, &EnvelopeError{Label: label, SubID: sub, Err: err}
		}
		if label == LabelReq {
			return &ReqEnvelope{SubID: sub, Filters: filters}, nil
		}
		return &CountEnvelope{SubID: sub, Filters: filters}, nil
	case LabelClose:
		sub, err := p.subID()
		if err == nil {
			err = p.endArray()
		}
		if err != nil {
			return nil, &EnvelopeError{Label: label, SubID: sub, Err: err}
		}
		return &CloseEnvelope{SubID: sub}, nil
	}
	return nil, errUnknownLabel
}

// envelopeEvent reads `, <event> ]` and the end of input.
func (p *scanner) envelopeEvent() (*Event, error) {
	if !p.consume(',') {
		return nil, errors.New("invalid: message must carry an event object")
	}
	ev := new(Event)
	if err := p.parseEvent(ev); err != nil {
		return nil, err
	}
	if err := p.endArray(); err != nil {
		return nil, err
	}
	return ev, nil
}

// endArray reads the closing ']' and checks that nothing follows.
func (p *scanner) endArray() error {
	if p.consume(',') {
		return errExtraElements
	}
	if !p.consume(']') {
		return errSyntax
	}
	if !p.atEnd() {
		return errTrailing
	}
	return nil
}

func (p *scanner) subID() (string, error) {
	if !p.consume(',') {
		return "", errSubID
	}
	sub, se := p.readString()
	if se != strOK {
		if se == strNotString {
			return "", errSubID
		}
		return "", fieldErr("subscription id", se)
	}
	if sub == "" {
		return "", errSubID
	}
	return sub, nil
}

func (p *scanner) subAndFilters(lim FilterLimits) (string, []Filter, error) {
	sub, err := p.subID()
	if err != nil {
		return "", nil, err
	}
	var filters []Filter
	start := p.i
	for p.consume(',') {
		if filters, err = p.limitedFilter(lim, start, filters); err != nil {
			return sub, nil, err
		}
	}
	if !p.consume(']') {
		return sub, nil, errSyntax
	}
	if !p.atEnd() {
		return sub, nil, errTrailing
	}
	if len(filters) == 0 {
		return sub, nil, errNeedFilter
	}
	return sub, filters, nil
}

// limitedFilter parses the filter at the cursor and appends it to filters,
// refusing it when filters already holds lim.MaxFilters or when the filters
// read since byte start exceed lim.MaxBytes (values per field are bounded
// by the scanner's maxValues).
func (p *scanner) limitedFilter(lim FilterLimits, start int, filters []Filter) ([]Filter, error) {
	if lim.MaxFilters > 0 && len(filters) == lim.MaxFilters {
		return nil, fmt.Errorf("invalid: too many filters (limit %d)", lim.MaxFilters)
	}
	f, err := p.parseFilter()
	if err != nil {
		return nil, err
	}
	if lim.MaxBytes > 0 && p.i-start > lim.MaxBytes {
		return nil, fmt.Errorf("invalid: filters too large (limit %d bytes)", lim.MaxBytes)
	}
	return append(filters, f), nil
}

// ParseFiltersLimited parses a filter object, or a JSON array of filter
// objects, bounded by lim exactly as ParseClientMessageLimited bounds the
// filters of a REQ or COUNT, with the same errors: the body of an HTTP read
// is held to a WebSocket subscription's limits. An empty array gives
// "invalid: at least one filter is required".
func ParseFiltersLimited(data []byte, lim FilterLimits) ([]Filter, error) {
	p := scanner{s: string(data), maxValues: lim.MaxValues}
	p.ws()
	start := p.i
	var filters []Filter
	var err error
	if !p.consume('[') {
		if filters, err = p.limitedFilter(lim, start, nil); err != nil {
			return nil, err
		}
	} else {
		if p.consume(']') {
			return nil, errNeedFilter
		}
		for {
			if filters, err = p.limitedFilter(lim, start, filters); err != nil {
				return nil, err
			}
			if !p.consume(',') {
				break
			}
		}
		if !p.consume(']') {
			return nil, errSyntax
		}
	}
	if !p.atEnd() {
		return nil, errors.New("invalid: unexpected data after the filters")
	}
	return filters, nil
}

// bestEffortID finds the top-level "id" of the event in a malformed
// ["EVENT", {...}] message, returning "" unless it is 64 lowercase hex.
func bestEffortID(data []byte) string {
	p := scanner{s: string(data)}
	if !p.consume('[') {
		return ""
	}
	if _, se := p.skipString(); se != strOK || !p.consume(',') || !p.consume('{') {
		return ""
	}
	for {
		key, se := p.readString()
		if se != strOK || !p.consume(':') {
			return ""
		}
		if key == "id" {
			if v, se := p.readString(); se == strOK && IsLowerHex(v, 64) {
				return v
			}
			return ""
		}
		if p.skipValue(1) != nil || !p.consume(',') {
			return ""
		}
	}
}

// Relay→client writers. Each appends one complete message to dst.

// AppendOK appends ["OK", <event id>, <ok>, <message>] (NIP-01).
func AppendOK(dst []byte, eventID string, ok bool, msg string) []byte {
	dst = append(dst, `["OK",`...)
	dst = AppendString(dst, eventID)
	if ok {
		dst = append(dst, ",true,"...)
	} else {
		dst = append(dst, ",false,"...)
	}
	dst = AppendString(dst, msg)
	return append(dst, ']')
}

// AppendEOSE appends ["EOSE", <sub id>].
func AppendEOSE(dst []byte, subID string) []byte {
	dst = append(dst, `["EOSE",`...)
	dst = AppendString(dst, subID)
	return append(dst, ']')
}

// AppendClosed appends ["CLOSED", <sub id>, <message>].
func AppendClosed(dst []byte, subID, msg string) []byte {
	dst = append(dst, `["CLOSED",`...)
	dst = AppendString(dst, subID)
	dst = append(dst, ',')
	dst = AppendString(dst, msg)
	return append(dst, ']')
}

// AppendNotice appends ["NOTICE", <message>].
func AppendNotice(dst []byte, msg string) []byte {
	dst = append(dst, `["NOTICE",`...)
	dst = AppendString(dst, msg)
	return append(dst, ']')
}

// AppendAuthChallenge appends ["AUTH", <challenge>] (NIP-42).
func AppendAuthChallenge(dst []byte, challenge string) []byte {
	dst = append(dst, `["AUTH",`...)
	dst = AppendString(dst, challenge)
	return append(dst, ']')
}

// AppendCountResult appends ["COUNT", <sub id>, {"count": <count>}] (NIP-45).
func AppendCountResult(dst []byte, subID string, count int64) []byte {
	dst = append(dst, `["COUNT",`...)
	dst = AppendString(dst, subID)
	dst = append(dst, `,{"count":`...)
	dst = strconv.AppendInt(dst, count, 10)
	return append(dst, `}]`...)
}

// AppendEventMessage appends ["EVENT", <sub id>, <event>], rawEvent being
// an event's AppendJSON bytes, copied as they are.
func AppendEventMessage(dst []byte, subID string, rawEvent []byte) []byte {
	dst = grow(dst, len(`["EVENT",`)+stringSize(subID)+1+len(rawEvent)+1)
	dst = AppendEventMessagePrefix(dst, subID)
	dst = append(dst, rawEvent...)
	return append(dst, ']')
}

// AppendEventMessagePrefix appends what comes before the event in an EVENT
// message for subID, `["EVENT",<sub id>,`: the message is that, the event's
// AppendJSON bytes and "]".
func AppendEventMessagePrefix(dst []byte, subID string) []byte {
	dst = append(dst, `["EVENT",`...)
	dst = AppendString(dst, subID)
	return append(dst, ',')
}

// Client→relay writers.

// AppendEventEnvelope appends ["EVENT", <event>], rawEvent being an event's
// AppendJSON bytes.
func AppendEventEnvelope(dst, rawEvent []byte) []byte {
	dst = append(dst, `["EVENT",`...)
	dst = append(dst, rawEvent...)
	return append(dst, ']')
}

// AppendAuth appends ["AUTH", <event>] (NIP-42), rawEvent being a signed
// kind-22242 event's AppendJSON bytes.
func AppendAuth(dst, rawEvent []byte) []byte {
	dst = append(dst, `["AUTH",`...)
	dst = append(dst, rawEvent...)
	return append(dst, ']')
}

// AppendReq appends ["REQ", <sub id>, <filter>...].
func AppendReq(dst []byte, subID string, filters ...Filter) []byte {
	return appendSubFilters(dst, `["REQ",`, subID, filters)
}

// AppendCount appends ["COUNT", <sub id>, <filter>...] (NIP-45).
func AppendCount(dst []byte, subID string, filters ...Filter) []byte {
	return appendSubFilters(dst, `["COUNT",`, subID, filters)
}

func appendSubFilters(dst []byte, head, subID string, filters []Filter) []byte {
	dst = append(dst, head...)
	dst = AppendString(dst, subID)
	for i := range filters {
		dst = append(dst, ',')
		dst = filters[i].AppendJSON(dst)
	}
	return append(dst, ']')
}

// AppendClose appends ["CLOSE", <sub id>].
func AppendClose(dst []byte, subID string) []byte {
	dst = append(dst, `["CLOSE",`...)
	dst = AppendString(dst, subID)
	return append(dst, ']')
}

// RelayMessage is a message a relay sends to a client: *EventMessage,
// *OKMessage, *EOSEMessage, *ClosedMessage, *NoticeMessage,
// *AuthChallengeMessage or *CountMessage.
type RelayMessage interface {
	Label() string
}

// EventMessage is ["EVENT", <sub id>, <event>]. Raw holds the event
// object's bytes exactly as received.
type EventMessage struct {
	SubID string
	Event *Event
	Raw   []byte
}

// OKMessage is ["OK", <event id>, <accepted>, <message>].
type OKMessage struct {
	EventID string
	OK      bool
	Message string
}

// EOSEMessage is ["EOSE", <sub id>].
type EOSEMessage struct{ SubID string }

// ClosedMessage is ["CLOSED", <sub id>, <message>].
type ClosedMessage struct {
	SubID   string
	Message string
}

// NoticeMessage is ["NOTICE", <message>].
type NoticeMessage struct{ Message string }

// AuthChallengeMessage is ["AUTH", <challenge>] (NIP-42).
type AuthChallengeMessage struct{ Challenge string }

// CountMessage is ["COUNT", <sub id>, {"count": <n>, "approximate": <bool>}]
// (NIP-45); "approximate" is optional.
type CountMessage struct {
	SubID       string
	Count       int64
	Approximate bool
}

func (*EventMessage) Label() string         { return LabelEvent }
func (*OKMessage) Label() string            { return LabelOK }
func (*EOSEMessage) Label() string          { return LabelEOSE }
func (*ClosedMessage) Label() string        { return LabelClosed }
func (*NoticeMessage) Label() string        { return LabelNotice }
func (*AuthChallengeMessage) Label() string { return LabelAuth }
func (*CountMessage) Label() string         { return LabelCount }

// ParseRelayMessage decodes one relay→client message, as strictly as
// ParseClientMessage. Errors start with "invalid: ".
func ParseRelayMessage(data []byte) (RelayMessage, error) {
	p := scanner{s: string(data)}
	if !p.consume('[') {
		return nil, errNotArray
	}
	label, se := p.readString()
	if se != strOK {
		return nil, errors.New("invalid: message type must be a string")
	}
	str := func(what string) (string, error) {
		if !p.consume(',') {
			return "", errors.New("invalid: missing " + what)
		}
		v, se := p.readString()
		if se != strOK {
			return "", fieldErr(what, se)
		}
		return v, nil
	}
	var msg RelayMessage
	var err error
	switch label {
	case LabelEvent:
		m := &EventMessage{}
		if m.SubID, err = str("subscription id"); err != nil {
			break
		}
		if !p.consume(',') {
			err = errors.New("invalid: missing event")
			break
		}
		p.ws()
		start := p.i
		ev := new(Event)
		if err = p.parseEvent(ev); err != nil {
			break
		}
		m.Event = ev
		m.Raw = []byte(p.s[start:p.i])
		msg = m
	case LabelOK:
		m := &OKMessage{}
		if m.EventID, err = str("event id"); err != nil {
			break
		}
		if !p.consume(',') {
			err = errors.New("invalid: missing OK status")
			break
		}
		p.ws()
		switch {
		case p.literal("true") == nil:
			m.OK = true
		case p.literal("false") == nil:
		default:
			err = errors.New("invalid: OK status must be a boolean")
		}
		if err != nil {
			break
		}
		m.Message, err = str("message")
		msg = m
	case LabelEOSE:
		m := &EOSEMessage{}
		m.SubID, err = str("subscription id")
		msg = m
	case LabelClosed:
		m := &ClosedMessage{}
		if m.SubID, err = str("subscription id"); err == nil {
			m.Message, err = str("message")
		}
		msg = m
	case LabelNotice:
		m := &NoticeMessage{}
		m.Message, err = str("message")
		msg = m
	case LabelAuth:
		m := &AuthChallengeMessage{}
		m.Challenge, err = str("challenge")
		msg = m
	case LabelCount:
		m := &CountMessage{}
		if m.SubID, err = str("subscription id"); err == nil {
			err = p.countObject(m)
		}
		msg = m
	default:
		return nil, errUnknownLabel
	}
	if err == nil {
		err = p.endArray()
	}
	if err != nil {
		return nil, err
	}
	return msg, nil
}

var errCountShape = errors.New(`invalid: COUNT result must be an object with an integer "count"`)

func (p *scanner) countObject(m *CountMessage) error {
	shape := errCountShape
	if !p.consume(',') || !p.consume('{') {
		return shape
	}
	haveCount := false
	if !p.consume('}') {
		for {
			key, se := p.readString()
			if se != strOK || !p.consume(':') {
				return shape
			}
			switch key {
			case "count":
				v, ne := p.readUint(maxInt64)
				if ne != numOK || haveCount {
					return shape
				}
				m.Count = int64(v)
				haveCount = true
			case "approximate":
				p.ws()
				switch {
				case p.literal("true") == nil:
					m.Approximate = true
				case p.literal("false") == nil:
				default:
					return shape
				}
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
			return shape
		}
	}
	if !haveCount {
		return shape
	}
	return nil
}
