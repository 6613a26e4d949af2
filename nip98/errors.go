package nip98

import "errors"

// The reasons a request is refused. Verify returns them wrapped in an *Error,
// so test with errors.Is. Every text starts with "NIP-98: ", is fixed, and
// never contains the URL the server expected, a host, or anything read from
// storage, so it may be sent to the client as is. Every one of them means
// HTTP 401 Unauthorized.
var (
	// ErrMissing: no Authorization header.
	ErrMissing = errors.New("NIP-98: missing Authorization header")
	// ErrMalformed: not "Nostr <base64 event>", not base64, or not an event.
	ErrMalformed = errors.New("NIP-98: malformed Authorization header")
	// ErrTooLarge: the header is longer than the verifier accepts.
	ErrTooLarge = errors.New("NIP-98: Authorization header too large")
	// ErrWrongKind: the event is not of kind 27235.
	ErrWrongKind = errors.New("NIP-98: event kind must be 27235")
	// ErrBadID: the event id is not the hash of its content.
	ErrBadID = errors.New("NIP-98: event id does not match its content")
	// ErrBadSignature: the signature does not verify.
	ErrBadSignature = errors.New("NIP-98: invalid signature")
	// ErrStale: created_at is outside the accepted window around now.
	ErrStale = errors.New("NIP-98: event created_at is outside the accepted window")
	// ErrWrongURL: not exactly one u tag, or it does not name this request.
	ErrWrongURL = errors.New("NIP-98: u tag does not match the request URL")
	// ErrWrongMethod: not exactly one method tag, or it is another method.
	ErrWrongMethod = errors.New("NIP-98: method tag does not match the request method")
	// ErrPayload: the payload tag is not the SHA-256 of the body, or appears
	// more than once.
	ErrPayload = errors.New("NIP-98: payload tag does not match the request body")
	// ErrPayloadRequired: the request needs a payload tag and has none.
	ErrPayloadRequired = errors.New("NIP-98: payload tag required")
	// ErrReplayed: this event was already used in this replay scope.
	ErrReplayed = errors.New("NIP-98: replay detected")
	// ErrReplayUnavailable: the replay guard could not decide (store
	// unreachable, full, or no scope given); the request is refused.
	ErrReplayUnavailable = errors.New("NIP-98: replay check unavailable")
)

// Error is the error Verify and ParseHeader return. Its text is exactly
// Reason's (one of the Err* values above), so it can be shown to a client;
// Cause, when set, says what actually failed — a decoder message, a Redis
// error — and is meant for server logs only. errors.Is and errors.As see
// both Reason and Cause.
type Error struct {
	Reason error
	Cause  error
}

// Error returns Reason's text.
func (e *Error) Error() string { return e.Reason.Error() }

// Unwrap returns Reason and, when set, Cause.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Cause}
}

func fail(reason, cause error) error { return &Error{Reason: reason, Cause: cause} }

// ClientMessage is the text to answer a request with when Verify refused
// it with err, on a server whose hosts belong to different communities: a
// token that is not valid for this request's URL — signed for another
// host, of another kind, or with a wrong id or signature — gets one answer,
// ErrBadSignature's text, so no answer tells a token meant for another
// community from a forged one. Any other *Error answers its Reason's text;
// an error that is not an *Error answers ErrBadSignature's.
func ClientMessage(err error) string {
	for _, e := range []error{ErrWrongURL, ErrBadID, ErrWrongKind, ErrBadSignature} {
		if errors.Is(err, e) {
			return ErrBadSignature.Error()
		}
	}
	var ne *Error
	if errors.As(err, &ne) {
		return ne.Reason.Error()
	}
	return ErrBadSignature.Error()
}
