package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// mapDirectory is a real in-memory Directory: a map of normalized hosts.
type mapDirectory struct {
	hosts map[string]CommunityID
	err   error // returned for every lookup when set
}

func (m *mapDirectory) LookupHost(_ context.Context, host string) (CommunityID, error) {
	if m.err != nil {
		return CommunityID{}, m.err
	}
	id, ok := m.hosts[host]
	if !ok {
		return CommunityID{}, ErrUnmappedHost
	}
	return id, nil
}

func TestBind(t *testing.T) {
	a, b := NewCommunityID(), NewCommunityID()
	dir := &mapDirectory{hosts: map[string]CommunityID{
		"relay.example":      a,
		"relay.example:8443": b,
		"localhost:3000":     b,
		"zero.example":       {},
	}}
	ctx := context.Background()

	for _, raw := range []string{"relay.example", "Relay.Example.:443", " RELAY.EXAMPLE:80 "} {
		tc, err := Bind(ctx, dir, raw)
		if err != nil {
			t.Fatalf("Bind(%q): %v", raw, err)
		}
		if tc.Community() != a || tc.Host() != "relay.example" || tc.IsZero() {
			t.Fatalf("Bind(%q) = %v %q", raw, tc.Community(), tc.Host())
		}
	}
	if tc, err := Bind(ctx, dir, "relay.example:8443"); err != nil || tc.Community() != b {
		t.Fatalf("non-default port: %v %v", tc.Community(), err)
	}
	if tc, err := Bind(ctx, dir, "127.0.0.1:3000"); err != nil || tc.Community() != b || tc.Host() != "localhost:3000" {
		t.Fatalf("loopback: %v %q %v", tc.Community(), tc.Host(), err)
	}

	secret := "secret-host.example"
	failures := map[string]Directory{
		secret:                 dir,                                                            // unmapped
		"zero.example":         dir,                                                            // directory returned the zero id
		"":                     dir,                                                            // empty host, never looked up
		"wss://" + secret:      dir,                                                            // malformed
		secret + ":8443":       &mapDirectory{err: errors.New("db down looking up " + secret)}, // lookup error
		secret + ".:443":       &mapDirectory{err: context.DeadlineExceeded},
		"relay.example:3000 ":  dir,
		"relay.example:443.":   dir,
		"relay.example\x00bad": dir,
	}
	for raw, d := range failures {
		tc, err := Bind(ctx, d, raw)
		if err == nil {
			t.Errorf("Bind(%q) succeeded: %v", raw, tc.Community())
			continue
		}
		if !tc.IsZero() {
			t.Errorf("Bind(%q) returned a bound context with an error", raw)
		}
		if !errors.Is(err, ErrUnmappedHost) {
			t.Errorf("Bind(%q) error %v does not wrap ErrUnmappedHost", raw, err)
		}
		if err.Error() != ErrUnmappedHost.Error() {
			t.Errorf("Bind(%q) error text %q, want exactly %q", raw, err, ErrUnmappedHost)
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "db down") {
			t.Errorf("Bind(%q) error %q leaks", raw, err)
		}
		var be *BindError
		if !errors.As(err, &be) {
			t.Errorf("Bind(%q) error is not a *BindError", raw)
		}
	}
	// The cause stays reachable for server-side logs.
	_, err := Bind(ctx, &mapDirectory{err: context.DeadlineExceeded}, "relay.example")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lookup cause lost: %v", err)
	}
}

func TestCommunityIDRefusesDecoding(t *testing.T) {
	id := NewCommunityID()
	text := id.String()

	var c CommunityID
	if err := json.Unmarshal([]byte(`"`+text+`"`), &c); err == nil || !c.IsZero() {
		t.Fatalf("JSON string decoded: %v %v", c, err)
	}
	var s struct {
		C CommunityID `json:"c"`
	}
	if err := json.Unmarshal([]byte(`{"c":"`+text+`"}`), &s); err == nil || !s.C.IsZero() {
		t.Fatalf("JSON field decoded: %v %v", s.C, err)
	}
	var m map[CommunityID]int // text-unmarshalled map keys
	if err := json.Unmarshal([]byte(`{"`+text+`":1}`), &m); err == nil {
		t.Fatalf("JSON map key decoded: %v", m)
	}
	if err := c.UnmarshalText([]byte(text)); err == nil || !c.IsZero() {
		t.Fatalf("UnmarshalText decoded: %v %v", c, err)
	}
	if err := json.Unmarshal([]byte(`{"u":[1,2,3]}`), &c); err == nil || !c.IsZero() {
		t.Fatalf("object decoded: %v %v", c, err)
	}
}

func TestCommunityID(t *testing.T) {
	a, b := NewCommunityID(), NewCommunityID()
	if a == b || a.IsZero() {
		t.Fatal("NewCommunityID not unique or zero")
	}
	u := a.UUID()
	if u[6]>>4 != 4 || u[8]>>6 != 2 {
		t.Fatalf("not a v4 UUID: %s", a)
	}
	if FromUUID(u) != a {
		t.Fatal("FromUUID(UUID()) round trip")
	}
	s := FromUUID([16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0, 1, 2, 3, 4, 5, 6, 7}).String()
	if s != "01234567-89ab-cdef-0001-020304050607" {
		t.Fatalf("String = %s", s)
	}
}
