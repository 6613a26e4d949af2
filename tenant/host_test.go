package tenant

import (
	"strings"
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	tests := []struct {
		in   string
		want string // "" = error expected
	}{
		// The seed's equivalence class: all one tenant.
		{"relay.example", "relay.example"},
		{"Relay.Example", "relay.example"},
		{"RELAY.EXAMPLE", "relay.example"},
		{"relay.example.", "relay.example"},
		{"relay.example:443", "relay.example"},
		{"relay.example:80", "relay.example"},
		{"Relay.Example.:443", "relay.example"},
		{"relay.example.:80", "relay.example"},
		// Whitespace trimmed.
		{"  relay.example\t", "relay.example"},
		{"\r\nrelay.example:443 \n", "relay.example"},
		// Non-default ports are distinct selectors.
		{"relay.example:8443", "relay.example:8443"},
		{"relay.example:3000", "relay.example:3000"},
		{"Relay.Example.:8443", "relay.example:8443"},
		{"relay.example:1", "relay.example:1"},
		{"relay.example:65535", "relay.example:65535"},
		// Loopback folds to localhost, keeping a non-default port.
		{"127.0.0.1", "localhost"},
		{"127.0.0.1:443", "localhost"},
		{"127.0.0.1:80", "localhost"},
		{"127.0.0.1:3000", "localhost:3000"},
		{"127.0.0.1.", "localhost"},
		{"[::1]", "localhost"},
		{"[::1]:443", "localhost"},
		{"[::1]:80", "localhost"},
		{"[::1]:3000", "localhost:3000"},
		{"[0:0:0:0:0:0:0:1]", "localhost"},
		{"localhost", "localhost"},
		{"LOCALHOST.:3000", "localhost:3000"},
		{"127.0.0.2", "127.0.0.2"},
		// IPv6 literals stay intact (lowercased), default port dropped.
		{"[2001:db8::1]:443", "[2001:db8::1]"},
		{"[2001:DB8::1]", "[2001:db8::1]"},
		{"[2001:db8::1]:8443", "[2001:db8::1]:8443"},
		{"[2001:db8:0:0::1]", "[2001:db8:0:0::1]"},
		{"[::ffff:10.0.0.1]", "[::ffff:10.0.0.1]"},
		// Lenient name characters are kept (lookup decides).
		{"buzz_relay:3000", "buzz_relay:3000"},
		{"a..b", "a..b"},
		{long63 + ".example", long63 + ".example"},
		{strings.Repeat("a", MaxHostLen), strings.Repeat("a", MaxHostLen)},
		{strings.Repeat("a", MaxHostLen-4) + ":443", strings.Repeat("a", MaxHostLen-4)},

		// Rejections.
		{"", ""},
		{"   ", ""},
		{".", ""},
		{":443", ""},
		{".:443", ""},
		{":8080", ""},
		{"relay.example..", ""},       // only one trailing dot
		{"relay.example..:443", ""},   // idem, before the port
		{"relay.example:443.", ""},    // a dot after the port is a malformed port
		{"relay.example:443:443", ""}, // not a port
		{"relay.example:", ""},        // empty port
		{"relay.example:0", ""},       // port 0
		{"relay.example:0443", ""},    // leading zero
		{"relay.example:65536", ""},   // too large
		{"relay.example:123456", ""},  // too long
		{"relay.example:+443", ""},    // sign
		{"relay.example:44a", ""},     // not decimal
		{"relay example", ""},         // inner whitespace
		{"relay\texample", ""},        // inner tab
		{"relay\x00example", ""},      // NUL
		{"relay\x7fexample", ""},      // DEL
		{"relay.example\x1b", ""},     // ESC at the end is not trimmed
		{"relay.example/", ""},        // path
		{"relay.example/path", ""},    // path
		{"wss://relay.example", ""},   // scheme
		{"relay.example?x=1", ""},     // query
		{"relay.example#frag", ""},    // fragment
		{"user@relay.example", ""},    // userinfo
		{"relay\\example", ""},        // backslash
		{"relay\"example", ""},        // quote
		{"relay<example>", ""},        // angle brackets
		{"rélay.example", ""},         // non-ASCII
		{"\u00a0relay.example", ""},   // non-ASCII space is not trimmed
		{"::1", ""},                   // unbracketed IPv6
		{"2001:db8::1", ""},           // unbracketed IPv6
		{"[::1", ""},                  // unclosed bracket
		{"[]", ""},                    // empty literal
		{"[relay.example]", ""},       // not an address
		{"[10.0.0.1]", ""},            // IPv4 in brackets
		{"[fe80::1%25eth0]", ""},      // zone
		{"[::1]x", ""},                // junk after literal
		{"[::1].", ""},                // dot after literal
		{"[::1]:", ""},                // empty port after literal
		{"[::1]:0", ""},               // port 0 after literal
		{"a]b", ""},                   // stray bracket
		{"a[b:80", ""},                // stray bracket with port
		{strings.Repeat("a", MaxHostLen+1), ""},
		{strings.Repeat("a", MaxHostLen-3) + ":443", ""}, // too long before stripping
	}
	for _, tt := range tests {
		got, err := NormalizeHost(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("NormalizeHost(%q) = %q, want error", tt.in, got)
				continue
			}
			if !strings.HasPrefix(err.Error(), "tenant: ") {
				t.Errorf("NormalizeHost(%q) error %q lacks the tenant: prefix", tt.in, err)
			}
			if len(tt.in) > 3 && strings.Contains(err.Error(), strings.TrimSpace(tt.in)) {
				t.Errorf("NormalizeHost(%q) error %q echoes the input", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("NormalizeHost(%q) error %v, want %q", tt.in, err, tt.want)
			continue
		}
		if got != tt.want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", tt.in, got, tt.want)
		}
		again, err := NormalizeHost(got)
		if err != nil || again != got {
			t.Errorf("NormalizeHost not idempotent on %q: %q, %v", got, again, err)
		}
	}
}

func TestValidateHost(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	// 4 labels of 63 + 3 dots = 255; trim to exactly 253.
	name253 := label63 + "." + label63 + "." + label63 + "." + strings.Repeat("b", 61)
	if len(name253) != 253 {
		t.Fatalf("bad fixture length %d", len(name253))
	}
	ok := []string{
		"relay.example",
		"localhost",
		"localhost:3000",
		"relay.example:8443",
		"relay.example:1",
		"relay.example:65535",
		"a",
		"a-b.c-d.example",
		"xn--bcher-kva.example",
		"10.0.0.5",
		"127.0.0.2:3000",
		"[2001:db8::1]",
		"[2001:db8::1]:8443",
		"[::ffff:10.0.0.1]",
		label63 + ".example",
		name253,
		"0relay.example9",
	}
	for _, h := range ok {
		if err := ValidateHost(h); err != nil {
			t.Errorf("ValidateHost(%q) = %v, want nil", h, err)
		}
		if n, err := NormalizeHost(h); err != nil || n != h {
			t.Errorf("valid host %q is not a NormalizeHost fixed point: %q, %v", h, n, err)
		}
	}
	bad := []string{
		"",
		"Relay.example",          // uppercase
		"RELAY.EXAMPLE",          // uppercase
		"relay.example.",         // trailing dot
		"relay.example.:8443",    // trailing dot before port
		"relay.example:443",      // default port
		"relay.example:80",       // default port
		"relay.example:0",        // port 0
		"relay.example:65536",    // port too large
		"relay.example:08443",    // leading zero
		"relay.example:",         // empty port
		"relay.example:http",     // non-digit port
		"https://relay.example",  // scheme
		"relay.example/",         // path
		"relay.example/x",        // path
		"relay.example?q",        // query
		"relay.example#f",        // fragment
		"op@relay.example",       // userinfo
		" relay.example",         // whitespace (not trimmed here)
		"relay.example ",         // whitespace
		"relay .example",         // whitespace
		"relay.\x01example",      // control
		"relay..example",         // ..
		".relay.example",         // empty first label
		"relay_1.example",        // underscore
		"-relay.example",         // leading hyphen
		"relay-.example",         // trailing hyphen
		"relay.-example",         // leading hyphen, later label
		"relay.example-",         // trailing hyphen, last label
		label63 + "a.example",    // 64-byte label
		name253 + "b",            // 254 bytes
		"relay!.example",         // sub-delim not allowed here
		"relay%41.example",       // percent
		"rélay.example",          // non-ASCII
		"127.0.0.1",              // loopback must be localhost
		"127.0.0.1:3000",         // idem
		"[::1]",                  // idem
		"[::1]:3000",             // idem
		"[0:0:0:0:0:0:0:1]",      // idem
		"[2001:DB8::1]",          // uppercase hex
		"[2001:db8::1]:443",      // default port
		"[2001:db8::1",           // unclosed
		"[fe80::1%25eth0]",       // zone
		"[relay.example]",        // not an address
		"2001:db8::1",            // unbracketed IPv6
		"relay.example:443:8443", // two ports
	}
	for _, h := range bad {
		err := ValidateHost(h)
		if err == nil {
			t.Errorf("ValidateHost(%q) = nil, want error", h)
			continue
		}
		if !strings.HasPrefix(err.Error(), "tenant: ") {
			t.Errorf("ValidateHost(%q) error %q lacks the tenant: prefix", h, err)
		}
		if len(h) > 3 && strings.Contains(err.Error(), h) {
			t.Errorf("ValidateHost(%q) error %q echoes the input", h, err)
		}
	}
}

// normalizeSeeds are shared by the fuzz targets' f.Add seeds.
var normalizeSeeds = []string{
	"relay.example", "Relay.Example.:443", "relay.example:80", "relay.example:8443",
	"127.0.0.1:3000", "[::1]:443", "[2001:DB8::1]:443", " relay.example. ", "relay.example:443.",
	"relay.example..", "wss://relay.example/", "user@host", "a\x00b", "[fe80::1%25eth0]",
	"localhost", "", ":443", "[::ffff:127.0.0.1]", "a_b.example", "xn--bcher-kva.example:3000",
}

func FuzzNormalizeHost(f *testing.F) {
	for _, s := range normalizeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out, err := NormalizeHost(raw)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tenant: ") {
				t.Fatalf("error %q lacks the tenant: prefix", err)
			}
			return
		}
		if out == "" {
			t.Fatalf("NormalizeHost(%q) returned empty without error", raw)
		}
		if len(out) > MaxHostLen {
			t.Fatalf("NormalizeHost(%q) = %q longer than %d", raw, out, MaxHostLen)
		}
		again, err := NormalizeHost(out)
		if err != nil || again != out {
			t.Fatalf("not idempotent: NormalizeHost(%q) = %q, then %q, %v", raw, out, again, err)
		}
		if strings.HasSuffix(out, ".") {
			t.Fatalf("NormalizeHost(%q) = %q ends with '.'", raw, out)
		}
		if strings.HasSuffix(out, ":80") || strings.HasSuffix(out, ":443") {
			t.Fatalf("NormalizeHost(%q) = %q keeps a default port", raw, out)
		}
		for i := 0; i < len(out); i++ {
			c := out[i]
			if c >= 'A' && c <= 'Z' || c <= ' ' || c >= 0x7f || strings.IndexByte("/?#@", c) >= 0 {
				t.Fatalf("NormalizeHost(%q) = %q contains byte %q", raw, out, c)
			}
		}
		if out == "127.0.0.1" || strings.HasPrefix(out, "127.0.0.1:") || strings.HasPrefix(out, "[::1]") {
			t.Fatalf("NormalizeHost(%q) = %q: loopback not folded", raw, out)
		}
	})
}

func FuzzValidateHost(f *testing.F) {
	for _, s := range normalizeSeeds {
		f.Add(s)
	}
	f.Add("a-b.c:65535")
	f.Add("[2001:db8::1]:8443")
	f.Fuzz(func(t *testing.T, host string) {
		err := ValidateHost(host)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tenant: ") {
				t.Fatalf("error %q lacks the tenant: prefix", err)
			}
			return
		}
		out, nerr := NormalizeHost(host)
		if nerr != nil || out != host {
			t.Fatalf("ValidateHost accepts %q but NormalizeHost gives %q, %v", host, out, nerr)
		}
	})
}
