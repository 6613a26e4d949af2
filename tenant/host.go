package tenant

import "errors"

// NormalizeHost returns the canonical form of an HTTP Host value, the single
// rule used both when a host is stored and when an incoming Host is resolved:
// surrounding whitespace trimmed, ASCII-lowercased, one trailing ":80" or
// ":443" removed, one trailing "." removed, IPv6 literals kept intact, and the
// loopback literals 127.0.0.1 and [::1] folded to "localhost" (keeping a
// non-default port). An empty result is an error.
func NormalizeHost(raw string) (string, error) {
	_ = raw
	return "", errors.New("tenant: NormalizeHost not implemented")
}
