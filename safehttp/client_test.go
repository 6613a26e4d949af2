package safehttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeDNS answers from a fixed table and counts lookups.
type fakeDNS struct {
	mu      sync.Mutex
	table   map[string][]netip.Addr
	lookups int
}

func (d *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lookups++
	a, ok := d.table[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a, nil
}

// routeTo is a dialer that records the address it is asked for and
// connects to the local test server instead: no test reaches an outside
// address.
type routeTo struct {
	mu     sync.Mutex
	server string
	dialed []string
}

func (r *routeTo) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	r.dialed = append(r.dialed, addr)
	r.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, r.server)
}

func (r *routeTo) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.dialed...)
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

type fixture struct {
	srv    *httptest.Server
	dns    *fakeDNS
	route  *routeTo
	client *Client
}

func newFixture(t *testing.T, h http.HandlerFunc, opts ...Option) *fixture {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dns := &fakeDNS{table: map[string][]netip.Addr{
		"hooks.example":    addrs("93.184.216.34"),
		"two.example":      addrs("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"),
		"mixed.example":    addrs("93.184.216.34", "10.0.0.7"),
		"metadata.example": addrs("169.254.169.254"),
		"mapped.example":   addrs("::ffff:127.0.0.1"),
		"aws6.example":     addrs("fd00:ec2::254"),
	}}
	route := &routeTo{server: srv.Listener.Addr().String()}
	c, err := New(append([]Option{WithResolver(dns), WithDialer(route.dial)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{srv, dns, route, c}
}

func TestDoReachesPinnedAddress(t *testing.T) {
	var got struct {
		method, body, ctype, key, host string
	}
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.method, got.body, got.ctype, got.key, got.host = r.Method, string(b), r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"), r.Host
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	resp, err := f.client.Do(context.Background(), Request{
		URL: "http://hooks.example:8080/notify?x=1", Method: "put", Body: []byte(`{"a":1}`),
		Headers: map[string]string{"X-Custom": "v", "Idempotency-Key": "run:step"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 201 || string(resp.Body) != `{"ok":true}` {
		t.Fatalf("response %d %q", resp.Status, resp.Body)
	}
	if got.method != "PUT" || got.body != `{"a":1}` || got.ctype != "application/json" || got.key != "run:step" || got.host != "hooks.example:8080" {
		t.Fatalf("server saw %+v", got)
	}
	if d := f.route.calls(); len(d) != 1 || d[0] != "93.184.216.34:8080" {
		t.Fatalf("dialed %v, want the resolved address once", d)
	}
	if f.dns.lookups != 1 {
		t.Fatalf("%d lookups, want 1", f.dns.lookups)
	}
}

func TestDoRefusesForbiddenDestinations(t *testing.T) {
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) { t.Error("request reached the server") })
	local := f.srv.URL // http://127.0.0.1:port — a real, reachable server
	for _, u := range []string{
		local,
		"http://localhost/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/latest/meta-data/",
		"http://[::ffff:127.0.0.1]/",
		"http://[::ffff:a9fe:a9fe]/",
		"http://[::1]:8080/",
		"http://0.0.0.0/",
		"http://10.1.2.3/",
		"http://100.64.0.1/",
		"http://[fe80::1%25eth0]/",
		"http://224.0.0.1/",
		"http://192.0.2.10/",
		"http://mixed.example/",
		"http://metadata.example/",
		"http://mapped.example/",
		"http://aws6.example/",
	} {
		_, err := f.client.Do(context.Background(), Request{URL: u})
		if u == "http://localhost/" {
			// Not in the fake DNS: refused by resolution, not reached.
			if err == nil {
				t.Errorf("%s: reached", u)
			}
			continue
		}
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("%s: err = %v, want ErrForbiddenAddress", u, err)
		}
	}
	for _, u := range []string{"ftp://hooks.example/", "file:///etc/passwd", "http://user:pw@hooks.example/", "http:///x", "http://hooks.example:0/", "gopher://hooks.example/"} {
		if _, err := f.client.Do(context.Background(), Request{URL: u}); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	if d := f.route.calls(); len(d) != 0 {
		t.Fatalf("dialed %v for refused destinations", d)
	}
}

func TestDoFollowsNoRedirectAndUsesNoProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://192.0.2.1:3128")
	t.Setenv("HTTPS_PROXY", "http://192.0.2.1:3128")
	var hits int
	var mu sync.Mutex
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		if !strings.HasPrefix(r.RequestURI, "/") {
			t.Errorf("request line %q is in proxy form", r.RequestURI)
		}
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	resp, err := f.client.Do(context.Background(), Request{Method: "GET", URL: "http://hooks.example/"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusFound || resp.Header.Get("Location") == "" {
		t.Fatalf("status %d, want the 302 itself", resp.Status)
	}
	if d := f.route.calls(); len(d) != 1 || d[0] != "93.184.216.34:80" {
		t.Fatalf("dialed %v: want one direct connection to the resolved address, no proxy", d)
	}
	if hits != 1 {
		t.Fatalf("%d requests reached the server, want 1", hits)
	}
}

func TestDoCapsResponse(t *testing.T) {
	size := 0
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", size)))
	}, WithMaxResponseBytes(1024))
	size = 1024
	resp, err := f.client.Do(context.Background(), Request{URL: "http://hooks.example/"})
	if err != nil || len(resp.Body) != 1024 {
		t.Fatalf("exactly the cap: %d bytes, %v", len(resp.Body), err)
	}
	size = 1025
	if _, err := f.client.Do(context.Background(), Request{URL: "http://hooks.example/"}); !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("over the cap: %v", err)
	}
}

func TestDoTimesOut(t *testing.T) {
	release := make(chan struct{})
	f := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}, WithTimeout(50*time.Millisecond))
	defer close(release)
	_, err := f.client.Do(context.Background(), Request{URL: "http://hooks.example/"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
}

func TestDoHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "sni=%s", r.TLS.ServerName)
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	route := &routeTo{server: srv.Listener.Addr().String()}
	c, err := New(WithResolver(&fakeDNS{table: map[string][]netip.Addr{"example.com": addrs("93.184.216.34")}}),
		WithDialer(route.dial), WithTLSConfig(&tls.Config{RootCAs: pool}))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(context.Background(), Request{Method: "GET", URL: "https://example.com/hook"})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Body) != "sni=example.com" {
		t.Fatalf("body %q", resp.Body)
	}
	if d := route.calls(); len(d) != 1 || d[0] != "93.184.216.34:443" {
		t.Fatalf("dialed %v", d)
	}
}

func TestOptionsValidated(t *testing.T) {
	for name, o := range map[string]Option{
		"nil resolver": WithResolver(nil), "nil dialer": WithDialer(nil), "zero timeout": WithTimeout(0),
		"huge timeout": WithTimeout(time.Hour), "zero cap": WithMaxResponseBytes(0), "nil tls": WithTLSConfig(nil),
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	c, err := New()
	if err != nil || c.timeout != DefaultTimeout || c.maxBody != DefaultMaxResponseBytes {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}

func TestAllowedPrefixes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("inside")) }))
	defer srv.Close()
	c, err := New(WithAllowedPrefixes(netip.MustParsePrefix("127.0.0.1/32")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(context.Background(), Request{Method: "GET", URL: srv.URL})
	if err != nil || string(resp.Body) != "inside" {
		t.Fatalf("allowed loopback: %q %v", resp.Body, err)
	}
	for _, u := range []string{"http://127.0.0.2/", "http://169.254.169.254/", "http://10.0.0.1/"} {
		if _, err := c.Do(context.Background(), Request{URL: u}); !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("%s outside the allowed range: %v", u, err)
		}
	}
	if _, err := New(WithAllowedPrefixes(netip.Prefix{})); err == nil {
		t.Fatal("invalid prefix accepted")
	}
}
