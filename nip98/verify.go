// Package nip98 verifies NIP-98 HTTP authentication: an
// "Authorization: Nostr <base64 event>" header carrying a signed kind-27235
// event that names the request's URL, method and (optionally) body hash.
//
// A Verifier checks, in this order, stopping at the first failure: the
// header is present, bounded and well formed; the event is kind 27235 with
// a valid id and signature; created_at is within ±window of now; exactly one
// u tag names the expected URL (see NormalizeURL); exactly one method tag
// names the request method (case-insensitively); the payload tag, when
// present or required, is the hex SHA-256 of the body. Only then — verify
// before marking, so an invalid request never consumes an id — does its
// ReplayGuard record the event id in the request's ReplayScope; a second use
// in the same scope is refused.
//
// Every failure is an *Error whose text starts with "NIP-98: " and never
// reveals the expected URL or another tenant's data; every failure means
// HTTP 401.
//
// Package nip98 owns the verification and the in-process MemoryGuard; it
// depends on nostr and tenant only. It must not import a Redis client (the
// shared guard is package nip98/redisreplay), the relay or a store.
package nip98

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

// DefaultWindow is how far created_at may be from now, either way.
const DefaultWindow = 60 * time.Second

// MaxWindow is the widest window WithWindow accepts: twice it is
// MaxReplayTTL, so a guard always remembers an id as long as its event is
// acceptable.
const MaxWindow = MaxReplayTTL / 2

// Verifier verifies NIP-98 requests. It is safe for concurrent use.
type Verifier struct {
	window  time.Duration
	now     func() time.Time
	sig     *nostr.Verifier
	guard   ReplayGuard
	maxSize int
}

// Option configures a Verifier.
type Option func(*Verifier) error

// WithWindow sets how far created_at may be from now, either way (default
// DefaultWindow; 1 s to MaxWindow).
func WithWindow(d time.Duration) Option {
	return func(v *Verifier) error {
		if d < time.Second || d > MaxWindow {
			return fmt.Errorf("nip98: window must be between 1s and %v, got %v", MaxWindow, d)
		}
		v.window = d
		return nil
	}
}

// WithClock sets the clock created_at is compared with (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(v *Verifier) error {
		if now == nil {
			return errors.New("nip98: nil clock")
		}
		v.now = now
		return nil
	}
}

// WithSignatureVerifier sets the verifier of event ids and signatures, for
// example the relay's, to share its public-key cache. By default the
// Verifier makes its own, without a cache (no goroutines, nothing to close).
// The caller keeps ownership of v.
func WithSignatureVerifier(sv *nostr.Verifier) Option {
	return func(v *Verifier) error {
		if sv == nil {
			return errors.New("nip98: nil signature verifier")
		}
		v.sig = sv
		return nil
	}
}

// WithReplayGuard sets the replay guard. By default the Verifier uses its own
// MemoryGuard of DefaultMemoryCapacity ids, which is sound for one process
// only: a deployment with several replicas must pass a shared guard such as
// redisreplay.Guard (package nip98/redisreplay).
func WithReplayGuard(g ReplayGuard) Option {
	return func(v *Verifier) error {
		if g == nil {
			return errors.New("nip98: nil replay guard")
		}
		v.guard = g
		return nil
	}
}

// WithMaxHeaderSize sets the longest Authorization value accepted, in bytes
// (default DefaultMaxHeaderSize; 512 B to 1 MiB).
func WithMaxHeaderSize(n int) Option {
	return func(v *Verifier) error {
		if n < 512 || n > 1<<20 {
			return fmt.Errorf("nip98: max header size must be between 512 and %d bytes, got %d", 1<<20, n)
		}
		v.maxSize = n
		return nil
	}
}

// NewVerifier returns a Verifier configured by opts.
func NewVerifier(opts ...Option) (*Verifier, error) {
	v := &Verifier{window: DefaultWindow, now: time.Now, maxSize: DefaultMaxHeaderSize}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("nip98: nil option")
		}
		if err := o(v); err != nil {
			return nil, err
		}
	}
	if v.sig == nil {
		sv, err := nostr.NewVerifier(nostr.WithPubKeyCacheSize(0))
		if err != nil {
			return nil, fmt.Errorf("nip98: signature verifier: %w", err)
		}
		v.sig = sv
	}
	if v.guard == nil {
		g, err := NewMemoryGuard(DefaultMemoryCapacity)
		if err != nil {
			return nil, err
		}
		v.guard = g
	}
	return v, nil
}

// Request is what one NIP-98 verification looks at.
type Request struct {
	// Authorization is the Authorization header value.
	Authorization string
	// Method is the HTTP method of the request.
	Method string
	// URL is the absolute URL the u tag must name (see ExpectedURL). It is
	// never shown to the client.
	URL string
	// Body is the request body; nil means empty.
	Body []byte
	// RequirePayload makes a missing payload tag an error (ErrPayloadRequired),
	// as for operator API POSTs. Without it a payload tag is checked only
	// when present.
	RequirePayload bool
	// Scope is the replay namespace: CommunityScope of the community the
	// host is bound to, or OperatorScope. The zero scope is refused.
	Scope ReplayScope
}

// HTTPRequest returns the Request for r with its Authorization header and
// method filled in, expectedURL (usually ExpectedURL(origin, r)) and body
// (read by the caller, within its own size limit). The caller sets
// RequirePayload and Scope. Several Authorization headers are joined with
// ",", which no valid value contains, so they are refused as malformed.
func HTTPRequest(r *http.Request, expectedURL string, body []byte) Request {
	return Request{
		Authorization: strings.Join(r.Header.Values("Authorization"), ","),
		Method:        r.Method,
		URL:           expectedURL,
		Body:          body,
	}
}

// Verify checks req as the package documentation describes and, when every
// check passes, marks the event id in req.Scope. It returns the signer's
// public key (64 lowercase hex). Every error is an *Error (see the Err*
// values); the request must then be answered 401 with err.Error() and
// nothing else.
func (v *Verifier) Verify(ctx context.Context, req Request) (pubkey string, err error) {
	ev, err := v.verifyEvent(req)
	if err != nil {
		return "", err
	}
	if req.Scope.IsZero() {
		return "", fail(ErrReplayUnavailable, errNoScope)
	}
	if err := v.guard.Mark(ctx, req.Scope, ev.ID, 2*v.window); err != nil {
		if errors.Is(err, ErrReplayed) {
			return "", fail(ErrReplayed, nil)
		}
		return "", fail(ErrReplayUnavailable, err)
	}
	return ev.PubKey, nil
}

// verifyEvent runs every check except the replay guard.
func (v *Verifier) verifyEvent(req Request) (*nostr.Event, error) {
	if req.Authorization == "" {
		return nil, fail(ErrMissing, nil)
	}
	ev, err := parseHeader(req.Authorization, v.maxSize)
	if err != nil {
		return nil, err
	}
	if ev.Kind != nostr.KindHTTPAuth {
		return nil, fail(ErrWrongKind, nil)
	}
	if err := v.sig.Verify(ev); err != nil {
		if errors.Is(err, nostr.ErrIDMismatch) {
			return nil, fail(ErrBadID, nil)
		}
		return nil, fail(ErrBadSignature, nil)
	}
	if d := v.now().Sub(time.Unix(ev.CreatedAt, 0)); d > v.window || d < -v.window {
		return nil, fail(ErrStale, nil)
	}
	if err := checkURL(ev, req.URL); err != nil {
		return nil, err
	}
	method, n := single(ev.Tags, "method")
	if n != 1 || req.Method == "" || !strings.EqualFold(method, req.Method) {
		return nil, fail(ErrWrongMethod, nil)
	}
	payload, n := single(ev.Tags, "payload")
	switch {
	case n == 0 && req.RequirePayload:
		return nil, fail(ErrPayloadRequired, nil)
	case n > 1:
		return nil, fail(ErrPayload, errors.New("nip98: several payload tags"))
	case n == 1:
		sum := sha256.Sum256(req.Body)
		got, err := hex.DecodeString(payload)
		if err != nil || len(got) != len(sum) || subtle.ConstantTimeCompare(got, sum[:]) != 1 {
			return nil, fail(ErrPayload, nil)
		}
	}
	return ev, nil
}

var errExpectedURL = errors.New("nip98: the expected URL is not an absolute http(s) URL")

// checkURL compares the event's single u tag with the expected URL after
// normalizing both. An invalid expected URL (a server bug) refuses every
// request, with a Cause saying so.
func checkURL(ev *nostr.Event, expected string) error {
	want, err := NormalizeURL(expected)
	if err != nil {
		return fail(ErrWrongURL, errExpectedURL)
	}
	u, n := single(ev.Tags, "u")
	if n != 1 {
		return fail(ErrWrongURL, nil)
	}
	got, err := NormalizeURL(u)
	if err != nil || got != want {
		return fail(ErrWrongURL, nil)
	}
	return nil
}

// single returns the value of the first tag called name ("" if it has no
// value) and how many such tags there are.
func single(tags nostr.Tags, name string) (string, int) {
	var val string
	n := 0
	for _, t := range tags {
		if len(t) == 0 || t[0] != name {
			continue
		}
		if n == 0 && len(t) > 1 {
			val = t[1]
		}
		n++
	}
	return val, n
}
