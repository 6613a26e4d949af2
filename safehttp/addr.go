package safehttp

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrForbiddenAddress is wrapped by every refusal of a destination address.
var ErrForbiddenAddress = errors.New("safehttp: destination address is not allowed")

// blocked are the ranges no request may reach: anything that is not a
// globally routed unicast address of somebody else's server.
var blocked = func() []namedPrefix {
	list := []struct{ cidr, why string }{
		// IPv4
		{"0.0.0.0/8", "unspecified (this network)"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "carrier-grade NAT"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (cloud metadata)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.0.2.0/24", "documentation"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"}, // includes 255.255.255.255 broadcast
		// IPv6
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible"},
		{"100::/64", "discard-only"},
		{"64:ff9b:1::/48", "local-use NAT64"},
		{"2001::/32", "Teredo"},
		{"2001:2::/48", "benchmarking"},
		{"2001:10::/28", "ORCHID"},
		{"2001:20::/28", "ORCHIDv2"},
		{"2001:db8::/32", "documentation"},
		{"3fff::/20", "documentation"},
		{"5f00::/16", "segment routing SIDs"},
		{"fc00::/7", "unique local (private; includes fd00:ec2::254 metadata)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"ff00::/8", "multicast"},
	}
	out := make([]namedPrefix, len(list))
	for i, b := range list {
		out[i] = namedPrefix{netip.MustParsePrefix(b.cidr), b.why}
	}
	return out
}()

type namedPrefix struct {
	p   netip.Prefix
	why string
}

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// CheckAddr returns nil when a is a public unicast address a request may
// connect to, and an error wrapping ErrForbiddenAddress naming the range
// otherwise: loopback, private, link-local (169.254.169.254 and other
// cloud metadata), carrier-grade NAT, multicast, unspecified, broadcast,
// reserved, documentation and benchmarking ranges, in IPv4 and IPv6. An
// IPv4 address embedded in IPv6 — IPv4-mapped (::ffff:a.b.c.d), NAT64
// (64:ff9b::/96) or 6to4 (2002::/16) — is judged as the IPv4 address;
// IPv4-compatible (::a.b.c.d) and Teredo forms are refused. Addresses with
// a zone are refused.
func CheckAddr(a netip.Addr) error {
	if !a.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrForbiddenAddress)
	}
	if a.Zone() != "" {
		return fmt.Errorf("%w: %s has a zone", ErrForbiddenAddress, a)
	}
	if a.Is4In6() {
		return checkEmbedded(a, a.Unmap())
	}
	if a.Is6() {
		b := a.As16()
		if nat64.Contains(a) {
			return checkEmbedded(a, netip.AddrFrom4([4]byte(b[12:16])))
		}
		if sixTo4.Contains(a) {
			return checkEmbedded(a, netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	for _, n := range blocked {
		if n.p.Contains(a) {
			return fmt.Errorf("%w: %s is %s", ErrForbiddenAddress, a, n.why)
		}
	}
	// The named ranges cover these; the standard library's predicates are
	// a second opinion should a range be missing above.
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return fmt.Errorf("%w: %s is not public unicast", ErrForbiddenAddress, a)
	}
	return nil
}

func checkEmbedded(outer, v4 netip.Addr) error {
	if err := CheckAddr(v4); err != nil {
		return fmt.Errorf("%w (embedded in %s)", err, outer)
	}
	return nil
}
