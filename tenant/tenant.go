// Package tenant binds every request to exactly one community.
//
// A community is selected by the HTTP Host header, normalized with
// NormalizeHost and resolved by a Directory. The resulting TenantContext is
// carried through every store call, broker topic and cache key. Client input
// can never construct one: CommunityID has no exported parser and refuses JSON
// decoding; only a Directory implementation (trusted code holding a row it
// read from its own storage) mints identifiers, through FromUUID.
//
// Package tenant owns community identity and host resolution; nearly every
// package imports it, so it must import nothing of buzz.
package tenant

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
)

// CommunityID identifies one community (tenant). The zero value identifies
// none and is never valid for a store call.
type CommunityID struct{ u [16]byte }

// FromUUID returns the CommunityID for a 16-byte UUID read from a directory's
// own storage. It is for Directory implementations; relay code never calls it
// on client input.
func FromUUID(u [16]byte) CommunityID { return CommunityID{u: u} }

// NewCommunityID returns a fresh random (version 4) community identifier.
func NewCommunityID() CommunityID {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails on supported platforms
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return CommunityID{u: u}
}

// UUID returns the identifier's 16 bytes.
func (c CommunityID) UUID() [16]byte { return c.u }

// IsZero reports whether c is the zero value.
func (c CommunityID) IsZero() bool { return c.u == [16]byte{} }

// String returns the canonical 8-4-4-4-12 UUID text.
func (c CommunityID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], c.u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], c.u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], c.u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], c.u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], c.u[10:])
	return string(b[:])
}

// UnmarshalJSON always fails: a community identifier is never taken from
// client-supplied JSON.
func (c *CommunityID) UnmarshalJSON([]byte) error {
	return errors.New("tenant: a CommunityID cannot be decoded from JSON")
}

// UnmarshalText always fails, for the same reason as UnmarshalJSON.
func (c *CommunityID) UnmarshalText([]byte) error {
	return errors.New("tenant: a CommunityID cannot be decoded from text")
}

// TenantContext is the community a connection or request is bound to, and the
// normalized host that selected it. It is created only by Bind and is
// immutable.
type TenantContext struct {
	community CommunityID
	host      string
}

// Community returns the bound community.
func (t TenantContext) Community() CommunityID { return t.community }

// Host returns the normalized host that selected the community.
func (t TenantContext) Host() string { return t.host }

// IsZero reports whether t is unbound.
func (t TenantContext) IsZero() bool { return t.community.IsZero() }

// ErrUnmappedHost is returned when no community is configured for a host,
// or when the lookup itself failed: both fail closed the same way.
var ErrUnmappedHost = errors.New("relay: no community is configured for this host")

// Directory maps normalized hosts to communities. Implementations must return
// ErrUnmappedHost (possibly wrapped) when the host is not mapped.
type Directory interface {
	LookupHost(ctx context.Context, normalizedHost string) (CommunityID, error)
}

// BindError is the error Bind returns. Its text is always exactly
// ErrUnmappedHost's — it never repeats the host or the cause, so it can be
// shown to a client as is — and errors.Is(err, ErrUnmappedHost) holds. Cause
// (also reachable through errors.Is/As) says what actually failed, for
// server-side logs only: it may mention the host or a storage error.
type BindError struct {
	Cause error // nil when the directory simply has no such host
}

// Error returns ErrUnmappedHost's text.
func (e *BindError) Error() string { return ErrUnmappedHost.Error() }

// Unwrap returns ErrUnmappedHost and the cause.
func (e *BindError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrUnmappedHost}
	}
	return []error{ErrUnmappedHost, e.Cause}
}

// Bind normalizes rawHost and resolves it through dir. Every failure —
// an empty or malformed host, an unmapped host, or a lookup error — returns
// a *BindError wrapping ErrUnmappedHost whose text is ErrUnmappedHost's, so
// callers answer all of them alike and never reveal which hosts exist.
func Bind(ctx context.Context, dir Directory, rawHost string) (TenantContext, error) {
	host, err := NormalizeHost(rawHost)
	if err != nil {
		return TenantContext{}, &BindError{Cause: err}
	}
	id, err := dir.LookupHost(ctx, host)
	if err != nil {
		return TenantContext{}, &BindError{Cause: err}
	}
	if id.IsZero() {
		return TenantContext{}, &BindError{}
	}
	return TenantContext{community: id, host: host}, nil
}
