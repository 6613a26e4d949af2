package tenant

import (
	"errors"
	"net/netip"
	"strings"
)

// MaxHostLen is the longest host, in bytes, NormalizeHost accepts (after
// surrounding whitespace is trimmed).
const MaxHostLen = 255

// maxValidHostLen is the longest host ValidateHost accepts: the DNS limit for
// a name, applied to the whole authority so that anything valid also fits
// MaxHostLen.
const maxValidHostLen = 253

const maxLabelLen = 63

var (
	errHostEmpty       = errors.New("tenant: host is empty")
	errHostTooLong     = errors.New("tenant: host is too long")
	errHostControl     = errors.New("tenant: host contains a control character")
	errHostSpace       = errors.New("tenant: host contains whitespace")
	errHostNonASCII    = errors.New("tenant: host contains a non-ASCII byte")
	errHostNotBare     = errors.New("tenant: host must be a bare authority (no scheme, path, query, fragment or userinfo)")
	errHostBadChar     = errors.New("tenant: host contains a character not allowed in a host name")
	errHostBadPort     = errors.New("tenant: host has a malformed port (want 1-65535, decimal, no leading zero)")
	errHostBadIPv6     = errors.New("tenant: host has a malformed bracketed IPv6 literal")
	errHostEmptyLabel  = errors.New("tenant: host has an empty label")
	errHostNotNorm     = errors.New("tenant: host is not normalized")
	errHostUnderscore  = errors.New("tenant: host contains '_'")
	errHostLabelLen    = errors.New("tenant: host has a label longer than 63 bytes")
	errHostLabelHyphen = errors.New("tenant: host has a label starting or ending with '-'")
	errHostLoopback    = errors.New("tenant: loopback host must be written as localhost")
)

// NormalizeHost returns the canonical form of an HTTP Host value, the single
// rule used both when a host is stored and when an incoming Host is resolved:
//
//   - surrounding ASCII whitespace is trimmed and letters are ASCII-lowercased;
//   - a default port (":80" or ":443") is removed, any other port is kept, so
//     relay.example:8443 selects a different community than relay.example;
//   - one trailing "." of the name is removed, whether it stands before the
//     port ("relay.example.:443") or at the very end ("relay.example.");
//   - IPv6 literals stay bracketed and otherwise as written (lowercased);
//   - the loopback literals 127.0.0.1 and [::1] (in any IPv6 spelling) fold to
//     "localhost", keeping a non-default port.
//
// It fails closed, with an error starting "tenant: " that never repeats the
// input, on an empty result, a host longer than MaxHostLen bytes, control
// characters, inner whitespace, non-ASCII bytes, '/', '?', '#', '@' or any
// other character outside RFC 3986's reg-name set, a second trailing dot, an
// unbracketed IPv6 address, or a port that is not a decimal 1-65535 without
// leading zeros (a dot after the port, "relay.example:443.", is such a port).
//
// NormalizeHost is idempotent: every result normalizes to itself.
func NormalizeHost(raw string) (string, error) {
	s := strings.Trim(raw, " \t\r\n\v\f")
	if s == "" {
		return "", errHostEmpty
	}
	if len(s) > MaxHostLen {
		return "", errHostTooLong
	}
	if err := checkHostBytes(s); err != nil {
		return "", err
	}
	s = asciiLower(s)

	name, port, err := splitHostPort(s)
	if err != nil {
		return "", err
	}
	if port == "80" || port == "443" {
		port = ""
	}
	if strings.HasPrefix(name, "[") {
		addr, err := parseBracketedIPv6(name)
		if err != nil {
			return "", err
		}
		if addr == netip.IPv6Loopback() {
			name = "localhost"
		}
	} else {
		name = strings.TrimSuffix(name, ".")
		if name == "" {
			return "", errHostEmpty
		}
		if strings.HasSuffix(name, ".") {
			return "", errHostEmptyLabel
		}
		if err := checkRegName(name); err != nil {
			return "", err
		}
		if name == "127.0.0.1" {
			name = "localhost"
		}
	}
	if port == "" {
		return name, nil
	}
	return name + ":" + port, nil
}

// ValidateHost checks an operator-supplied host (for example the host of a
// community being provisioned). It is stricter than NormalizeHost: the host
// must already be in normalized form — lowercase, no default port, no
// trailing dot, loopback written as "localhost" — and be a bare authority:
// no scheme, path, query, fragment or userinfo, no whitespace or control
// characters. A name consists of dot-separated labels of letters, digits and
// '-' (no '_', no empty label so no ".."), each at most 63 bytes and neither
// starting nor ending with '-'; a bracketed IPv6 literal is allowed instead of
// a name. An optional port is decimal 1-65535 without leading zeros. The
// whole host is at most 253 bytes.
//
// Every host ValidateHost accepts is returned unchanged by NormalizeHost.
// Errors start with "tenant: " and never repeat the input.
func ValidateHost(host string) error {
	if host == "" {
		return errHostEmpty
	}
	if len(host) > maxValidHostLen {
		return errHostTooLong
	}
	if err := checkHostBytes(host); err != nil {
		return err
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; c >= 'A' && c <= 'Z' {
			return errHostNotNorm
		}
	}
	name, port, err := splitHostPort(host)
	if err != nil {
		return err
	}
	if port == "80" || port == "443" {
		return errHostNotNorm
	}
	if strings.HasPrefix(name, "[") {
		addr, err := parseBracketedIPv6(name)
		if err != nil {
			return err
		}
		if addr == netip.IPv6Loopback() {
			return errHostLoopback
		}
		return nil
	}
	if name == "" {
		return errHostEmpty
	}
	if strings.HasSuffix(name, ".") {
		return errHostNotNorm
	}
	if name == "127.0.0.1" {
		return errHostLoopback
	}
	for label := range strings.SplitSeq(name, ".") {
		if err := checkLabel(label); err != nil {
			return err
		}
	}
	return nil
}

// checkHostBytes rejects bytes no host may contain: control characters,
// whitespace, non-ASCII, and the delimiters that would make it more than an
// authority.
func checkHostBytes(s string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			return errHostSpace
		case c < 0x20 || c == 0x7f:
			return errHostControl
		case c >= 0x80:
			return errHostNonASCII
		case c == '/' || c == '?' || c == '#' || c == '@' || c == '\\':
			return errHostNotBare
		}
	}
	return nil
}

// splitHostPort splits an authority into its name (a bracketed IPv6 literal
// keeps its brackets) and its port ("" when absent). The port, if present,
// is checked.
func splitHostPort(s string) (name, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errHostBadIPv6
		}
		name, rest := s[:end+1], s[end+1:]
		switch {
		case rest == "":
			return name, "", nil
		case rest[0] == ':':
			port = rest[1:]
		default:
			return "", "", errHostBadIPv6
		}
		if err := checkPort(port); err != nil {
			return "", "", err
		}
		return name, port, nil
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", nil
	}
	name, port = s[:i], s[i+1:]
	if strings.ContainsAny(name, ":[]") {
		// An unbracketed IPv6 address or a stray bracket.
		return "", "", errHostBadIPv6
	}
	if err := checkPort(port); err != nil {
		return "", "", err
	}
	return name, port, nil
}

// checkPort accepts a decimal 1..65535 with no sign and no leading zero.
func checkPort(p string) error {
	if p == "" || len(p) > 5 || p[0] == '0' {
		return errHostBadPort
	}
	n := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < '0' || c > '9' {
			return errHostBadPort
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return errHostBadPort
	}
	return nil
}

// parseBracketedIPv6 parses "[addr]" where addr is an IPv6 address without a
// zone, written in hex digits, ':' and '.' only.
func parseBracketedIPv6(s string) (netip.Addr, error) {
	if len(s) < 3 || s[0] != '[' || s[len(s)-1] != ']' {
		return netip.Addr{}, errHostBadIPv6
	}
	inner := s[1 : len(s)-1]
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.') {
			return netip.Addr{}, errHostBadIPv6
		}
	}
	addr, err := netip.ParseAddr(inner)
	if err != nil || !addr.Is6() {
		return netip.Addr{}, errHostBadIPv6
	}
	return addr, nil
}

// checkRegName accepts the characters RFC 3986 allows in a reg-name
// (unreserved, sub-delims and '%'), i.e. what a Host header's name may hold.
func checkRegName(name string) error {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=%", c) >= 0:
		default:
			return errHostBadChar
		}
	}
	return nil
}

// checkLabel applies ValidateHost's DNS label rules.
func checkLabel(l string) error {
	if l == "" {
		return errHostEmptyLabel
	}
	if len(l) > maxLabelLen {
		return errHostLabelLen
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return errHostLabelHyphen
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		case c == '_':
			return errHostUnderscore
		default:
			return errHostBadChar
		}
	}
	return nil
}

// asciiLower lowercases ASCII letters only, allocating only when needed.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + ('a' - 'A')
				}
			}
			return string(b)
		}
	}
	return s
}
