package nip77

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"github.com/buzzrelay/buzz/nostr"
	gonostr "github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

// Item is one element of a reconciled set: an event's created_at and its
// id (64 lowercase hex digits).
type Item struct {
	CreatedAt int64
	ID        string
}

// MinFrameBytes is the smallest frame size limit the protocol allows.
const MinFrameBytes = 4096

// FrameBytes is the frame size limit (in bytes of the binary message, half
// its hex) that keeps every NEG-MSG within maxMessage bytes of JSON: a
// peer that accepts messages of maxMessage bytes accepts those replies.
// It is never below MinFrameBytes.
func FrameBytes(maxMessage int) int {
	return max(MinFrameBytes, (maxMessage-512)/2)
}

// errItem refuses an item whose id is not 64 lowercase hex digits.
var errItem = errors.New("nip77: item id must be 64 lowercase hex digits")

// newVector seals items into the library's sorted storage.
func newVector(items []Item) (*vector.Vector, error) {
	v := vector.New()
	for _, it := range items {
		if !nostr.IsLowerHex(it.ID, 64) {
			return nil, fmt.Errorf("%w: %q", errItem, it.ID)
		}
		if it.CreatedAt < 0 || it.CreatedAt == math.MaxInt64 {
			return nil, fmt.Errorf("nip77: item %s: created_at %d out of range", it.ID, it.CreatedAt)
		}
		v.Insert(gonostr.Timestamp(it.CreatedAt), it.ID)
	}
	v.Seal()
	return v, nil
}

// Server is the relay side of one reconciliation (one NEG-OPEN) over a
// fixed set of items. It is not safe for concurrent use: a session's
// messages are answered one at a time, in order.
type Server struct {
	neg *negentropy.Negentropy
	n   int
}

// NewServer returns the server side over items (in any order; duplicates
// are the caller's to avoid) whose replies are at most frameBytes bytes of
// binary message (see FrameBytes; at least MinFrameBytes).
func NewServer(items []Item, frameBytes int) (*Server, error) {
	if frameBytes < MinFrameBytes {
		return nil, fmt.Errorf("nip77: frame size limit %d is below %d", frameBytes, MinFrameBytes)
	}
	v, err := newVector(items)
	if err != nil {
		return nil, err
	}
	return &Server{neg: negentropy.New(v, frameBytes), n: len(items)}, nil
}

// Len is the number of items reconciled over.
func (s *Server) Len() int { return s.n }

// Reconcile answers one client message (hex) with the next server message
// (hex). A message the protocol cannot read gives an "invalid: ..." error,
// after which the session is finished. A message of another protocol
// version is answered with this version alone, as the protocol asks.
func (s *Server) Reconcile(msg string) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("invalid: negentropy message could not be read")
		}
	}()
	if err := checkMessage(msg); err != nil {
		return "", err
	}
	out, err = s.neg.Reconcile(msg)
	if err != nil {
		return "", fmt.Errorf("invalid: negentropy message: %w", err)
	}
	return out, nil
}

// protocolVersion is the first byte of every negentropy v1 message.
const protocolVersion = 0x61

// checkMessage walks a client message (hex) before the library reads it:
// every range's bound, mode and payload must lie within the message, so
// that no count the message states (an id list's length, a bound's id
// length) makes the library allocate for more than the message holds.
// A message of another protocol version is left to the library, which
// answers it with its own version.
func checkMessage(msg string) error {
	if !validHex(msg) {
		return errors.New("invalid: negentropy message must be hex of even length")
	}
	b, _ := hex.DecodeString(msg) // validHex checked it
	if b[0] != protocolVersion {
		return nil
	}
	bad := errors.New("invalid: malformed negentropy message")
	i := 1
	varint := func() (int, bool) {
		n := 0
		for k := 0; k < 9; k++ {
			if i >= len(b) {
				return 0, false
			}
			c := b[i]
			i++
			n = n<<7 | int(c&0x7f)
			if c&0x80 == 0 {
				return n, true
			}
		}
		return 0, false // longer than any count or timestamp delta of 63 bits
	}
	for i < len(b) {
		if _, ok := varint(); !ok { // timestamp
			return bad
		}
		idLen, ok := varint()
		if !ok || idLen > 32 || idLen > len(b)-i {
			return bad
		}
		i += idLen
		mode, ok := varint()
		if !ok {
			return bad
		}
		switch mode {
		case 0: // skip
		case 1: // fingerprint
			if len(b)-i < 16 {
				return bad
			}
			i += 16
		case 2: // id list
			n, ok := varint()
			if !ok || n > (len(b)-i)/32 {
				return bad
			}
			i += 32 * n
		default:
			return bad
		}
	}
	return nil
}

func validHex(s string) bool {
	if len(s) < 2 || len(s)%2 != 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
