package safehttp

import (
	"errors"
	"net/netip"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0",
		"172.15.255.255", "172.32.0.0", "192.167.255.255", "198.17.255.255", "198.20.0.0",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e",
		"::ffff:8.8.8.8",   // IPv4-mapped public
		"64:ff9b::808:808", // NAT64 of 8.8.8.8
		"2002:808:808::1",  // 6to4 of 8.8.8.8
	}
	for _, s := range allowed {
		if err := CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("CheckAddr(%s) = %v, want allowed", s, err)
		}
	}
	forbidden := []string{
		// IPv4
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.255",
		"127.0.0.1", "127.255.255.254", "169.254.169.254", "169.254.0.1", "172.16.0.1",
		"172.31.255.255", "192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.1.1",
		"198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
		// IPv6
		"::", "::1", "fe80::1", "fe80::1%eth0", "fc00::1", "fd00::1", "fd00:ec2::254",
		"fec0::1", "ff02::1", "ff05::2", "2001:db8::1", "2001::1", "2001:2::1", "2001:10::1",
		"100::1", "64:ff9b:1::1", "3fff::1",
		// IPv4 in IPv6
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::ffff:0.0.0.0",
		"::127.0.0.1", "::10.0.0.1", "::8.8.8.8", // IPv4-compatible: always refused
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2002:a9fe:a9fe::",
		"2002:c0a8:101::1",
	}
	for _, s := range forbidden {
		err := CheckAddr(netip.MustParseAddr(s))
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("CheckAddr(%s) = %v, want ErrForbiddenAddress", s, err)
		}
	}
	if err := CheckAddr(netip.Addr{}); !errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("zero Addr allowed")
	}
}

// FuzzCheckAddr: whatever the 16 bytes, an allowed address is none of the
// standard library's non-public classes, and an IPv4-mapped address gets
// the verdict of its IPv4 address.
func FuzzCheckAddr(f *testing.F) {
	for _, s := range []string{"::ffff:127.0.0.1", "fd00:ec2::254", "2606:4700::1", "64:ff9b::a9fe:a9fe", "2002:a00:1::"} {
		b := netip.MustParseAddr(s).As16()
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) != 16 && len(raw) != 4 {
			return
		}
		a, _ := netip.AddrFromSlice(raw)
		err := CheckAddr(a)
		if err != nil && !errors.Is(err, ErrForbiddenAddress) {
			t.Fatalf("%s: error %v does not wrap ErrForbiddenAddress", a, err)
		}
		if err == nil {
			u := a.Unmap()
			if u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsMulticast() || u.IsUnspecified() ||
				u.IsInterfaceLocalMulticast() || u.IsLinkLocalMulticast() {
				t.Fatalf("%s allowed but not public unicast", a)
			}
		}
		if a.Is4() {
			mapped := netip.AddrFrom16(a.As16())
			if (CheckAddr(mapped) == nil) != (err == nil) {
				t.Fatalf("%s and %s judged differently", a, mapped)
			}
		}
	})
}
