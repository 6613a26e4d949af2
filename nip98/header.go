package nip98

import (
	"encoding/base64"
	"errors"
	"strings"

	"github.com/buzzrelay/buzz/nostr"
)

// DefaultMaxHeaderSize is the longest Authorization header value, in bytes,
// a Verifier accepts unless WithMaxHeaderSize says otherwise. A NIP-98 event
// with its u, method, payload and nonce tags is well under 1 KiB; 8 KiB
// leaves room for long URLs.
const DefaultMaxHeaderSize = 8 << 10

// Scheme is the HTTP authentication scheme of NIP-98.
const Scheme = "Nostr"

// ParseHeader decodes an Authorization header value of the form
// "Nostr <base64 event>" into an event, with DefaultMaxHeaderSize as the
// size bound. It checks the shape only: the kind, id, signature, time and
// tags are Verify's business.
//
// The scheme is matched case-insensitively (RFC 9110 §11.1) and followed by
// one or more spaces; surrounding spaces and tabs are ignored. The token may
// use the standard or the URL-safe base64 alphabet, padded or not (clients
// differ, and the encoding is not signed: replay protection keys on the
// event id, which every spelling of the same event shares). Mixed alphabets,
// bad padding and non-zero trailing bits are rejected. The decoded bytes
// must be one event object under nostr.ParseEvent's strict rules.
//
// Errors are *Error with Reason ErrMissing (empty value), ErrTooLarge or
// ErrMalformed.
func ParseHeader(value string) (*nostr.Event, error) {
	return parseHeader(value, DefaultMaxHeaderSize)
}

func parseHeader(value string, maxSize int) (*nostr.Event, error) {
	if len(value) > maxSize {
		return nil, fail(ErrTooLarge, nil)
	}
	v := strings.Trim(value, " \t")
	if v == "" {
		return nil, fail(ErrMissing, nil)
	}
	if len(v) <= len(Scheme) || !strings.EqualFold(v[:len(Scheme)], Scheme) || v[len(Scheme)] != ' ' {
		return nil, fail(ErrMalformed, errors.New("nip98: authorization scheme is not Nostr"))
	}
	token := strings.TrimLeft(v[len(Scheme):], " ")
	raw, err := decodeBase64(token)
	if err != nil {
		return nil, fail(ErrMalformed, err)
	}
	ev, err := nostr.ParseEvent(raw)
	if err != nil {
		return nil, fail(ErrMalformed, err)
	}
	return ev, nil
}

var (
	errEmptyToken    = errors.New("nip98: empty token")
	errBase64Charset = errors.New("nip98: token is not base64")
)

// decodeBase64 decodes a standard or URL-safe, padded or unpadded base64
// token strictly.
func decodeBase64(s string) ([]byte, error) {
	if s == "" {
		return nil, errEmptyToken
	}
	std, url := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '=':
		case c == '+' || c == '/':
			std = true
		case c == '-' || c == '_':
			url = true
		default:
			// Includes '\r' and '\n', which encoding/base64 would skip.
			return nil, errBase64Charset
		}
	}
	if std && url {
		return nil, errBase64Charset
	}
	enc := base64.StdEncoding
	if url {
		enc = base64.URLEncoding
	}
	if !strings.HasSuffix(s, "=") && len(s)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	return enc.Strict().DecodeString(s)
}
