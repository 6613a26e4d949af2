package operator

import (
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/tenant"
)

// FuzzCandidateHost: an accepted host is in stored form (it passes
// tenant.ValidateHost and normalizes to itself) and is accepted again
// unchanged; nothing with a delimiter or surrounding space is accepted.
func FuzzCandidateHost(f *testing.F) {
	for _, s := range []string{"a.example", "A.Example:443", "a.example.", "127.0.0.1:8080", "[::1]", "[2001:db8::1]:8443",
		"https://a.example", "a.example/x", "u@a.example", " a.example", "a_b.example", "a..example", "", "xn--bcher-kva.example", "a.example:0", "a.example:65536"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		host, err := candidateHost(raw)
		if err != nil {
			if host != "" {
				t.Fatalf("error with a result %q", host)
			}
			if strings.Contains(err.Error(), raw) && raw != "" && len(raw) > 3 {
				t.Fatalf("error echoes the input: %v", err)
			}
			return
		}
		if strings.ContainsAny(raw, "/?#@ \t\r\n") {
			t.Fatalf("accepted %q with a delimiter or space", raw)
		}
		if err := tenant.ValidateHost(host); err != nil {
			t.Fatalf("%q -> %q does not validate: %v", raw, host, err)
		}
		if n, err := tenant.NormalizeHost(host); err != nil || n != host {
			t.Fatalf("%q -> %q normalizes to %q, %v", raw, host, n, err)
		}
		if again, err := candidateHost(host); err != nil || again != host {
			t.Fatalf("%q -> %q -> %q, %v", raw, host, again, err)
		}
	})
}

// FuzzParseUUID: an accepted UUID text round-trips through the canonical
// form (case aside).
func FuzzParseUUID(f *testing.F) {
	for _, s := range []string{"00000000-0000-0000-0000-000000000000", tenant.NewCommunityID().String(),
		"6BA7B810-9DAD-11D1-80B4-00C04FD430C8", "6ba7b8109dad11d180b400c04fd430c8", "x", "6ba7b810-9dad-11d1-80b4-00c04fd430c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, ok := parseUUID(s)
		if !ok {
			return
		}
		if got := tenant.FromUUID(u).String(); got != strings.ToLower(s) {
			t.Fatalf("%q parsed to %s", s, got)
		}
	})
}
