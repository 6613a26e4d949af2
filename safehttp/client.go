// Package safehttp is an HTTP client for URLs that users supply (the
// workflow engine's call_webhook), hardened against server-side request
// forgery.
//
// Each request resolves its host once, refuses it when any resolved
// address is not public unicast (see CheckAddr), and connects to the
// address it checked — never resolving again, so a DNS answer cannot
// change between the check and the connection. It uses no proxy (the
// environment's HTTP_PROXY is ignored), follows no redirects (a 3xx is
// returned as the response), keeps no connections alive, gives up after a
// timeout (10 s by default) and refuses responses larger than a cap (1 MiB
// by default). The resolver and dialer are injectable, so tests never
// reach an outside address.
//
// It must not import the relay (package buzz) or a store.
package safehttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc opens a connection to addr ("ip:port", the checked address).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Defaults.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxResponseBytes = 1 << 20
)

// ErrResponseTooLarge is returned when a response body exceeds the cap.
var ErrResponseTooLarge = errors.New("safehttp: response body exceeds the size limit")

// Client makes SSRF-hardened requests. It is safe for concurrent use.
type Client struct {
	resolver Resolver
	dial     DialFunc
	timeout  time.Duration
	maxBody  int64
	tlsConf  *tls.Config
	allowed  []netip.Prefix // exempt from CheckAddr (WithAllowedPrefixes)
}

// Option configures a Client; New validates every option.
type Option func(*Client) error

// WithResolver sets the resolver (default net.DefaultResolver).
func WithResolver(r Resolver) Option {
	return func(c *Client) error {
		if r == nil {
			return errors.New("safehttp: nil resolver")
		}
		c.resolver = r
		return nil
	}
}

// WithDialer sets how connections to checked addresses are opened
// (default a net.Dialer). Tests route them to a local server with it; the
// address check still applies to the address resolved.
func WithDialer(d DialFunc) Option {
	return func(c *Client) error {
		if d == nil {
			return errors.New("safehttp: nil dialer")
		}
		c.dial = d
		return nil
	}
}

// WithTimeout bounds a whole request, connection to last body byte
// (default 10 s; 1 ms–5 min).
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d < time.Millisecond || d > 5*time.Minute {
			return fmt.Errorf("safehttp: timeout %v out of range 1ms-5m", d)
		}
		c.timeout = d
		return nil
	}
}

// WithMaxResponseBytes caps the response body (default 1 MiB; 1 B–64 MiB).
func WithMaxResponseBytes(n int64) Option {
	return func(c *Client) error {
		if n < 1 || n > 64<<20 {
			return fmt.Errorf("safehttp: response cap %d out of range 1-67108864", n)
		}
		c.maxBody = n
		return nil
	}
}

// WithTLSConfig sets the TLS configuration of https requests (tests use
// it to trust a local server's certificate). ServerName is always the
// URL's host.
func WithTLSConfig(t *tls.Config) Option {
	return func(c *Client) error {
		if t == nil {
			return errors.New("safehttp: nil TLS config")
		}
		c.tlsConf = t
		return nil
	}
}

// WithAllowedPrefixes exempts destinations inside the given ranges from
// the address check — for an operator who runs webhook receivers on an
// internal network on purpose (e.g. 10.20.0.0/16). Everything else is
// still refused. Use narrow ranges: an exempted range is reachable by
// every workflow author allowed to call webhooks.
func WithAllowedPrefixes(ps ...netip.Prefix) Option {
	return func(c *Client) error {
		for _, p := range ps {
			if !p.IsValid() {
				return fmt.Errorf("safehttp: invalid allowed prefix %v", p)
			}
			c.allowed = append(c.allowed, p.Masked())
		}
		return nil
	}
}

// check is CheckAddr with the allowed ranges exempted.
func (c *Client) check(a netip.Addr) error {
	for _, p := range c.allowed {
		if p.Contains(a) || p.Contains(a.Unmap()) {
			return nil
		}
	}
	return CheckAddr(a)
}

// New returns a Client.
func New(opts ...Option) (*Client, error) {
	d := &net.Dialer{Timeout: DefaultTimeout}
	c := &Client{
		resolver: net.DefaultResolver,
		dial:     d.DialContext,
		timeout:  DefaultTimeout,
		maxBody:  DefaultMaxResponseBytes,
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Request is one request.
type Request struct {
	Method  string // default POST
	URL     string // http or https, no user info
	Headers map[string]string
	Body    []byte
}

// Response is a response read in full (up to the cap).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends r: it resolves the URL's host once, checks every address, and
// connects to the first. Errors wrap ErrForbiddenAddress for a refused
// destination and ErrResponseTooLarge for an oversized body.
func (c *Client) Do(ctx context.Context, r Request) (Response, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return Response{}, fmt.Errorf("safehttp: invalid URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Response{}, fmt.Errorf("safehttp: scheme %q is not http or https", u.Scheme)
	}
	if u.User != nil {
		return Response{}, errors.New("safehttp: URLs with user info are not allowed")
	}
	host := u.Hostname()
	if host == "" {
		return Response{}, errors.New("safehttp: URL has no host")
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return Response{}, fmt.Errorf("safehttp: invalid port %q", port)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	target, err := c.resolve(ctx, host)
	if err != nil {
		return Response{}, err
	}
	pinned := net.JoinHostPort(target.String(), port)

	method := strings.ToUpper(r.Method)
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(r.Body))
	if err != nil {
		return Response{}, fmt.Errorf("safehttp: %w", err)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	if len(r.Body) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "buzz-webhook/1")
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.tlsConf != nil {
		tlsConf = c.tlsConf.Clone()
	}
	tlsConf.ServerName = host
	tr := &http.Transport{
		Proxy: nil, // never a proxy: it would resolve and connect on our behalf
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return c.dial(ctx, network, pinned)
		},
		TLSClientConfig:        tlsConf,
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      false,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("safehttp: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return Response{}, fmt.Errorf("safehttp: read response: %w", err)
	}
	if int64(len(body)) > c.maxBody {
		return Response{}, fmt.Errorf("%w (%d bytes)", ErrResponseTooLarge, c.maxBody)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// resolve returns the address to connect to: host itself when it is an IP
// literal, else the first resolved address — after checking all of them.
func (c *Client) resolve(ctx context.Context, host string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if err := c.check(a); err != nil {
			return netip.Addr{}, err
		}
		return a, nil
	}
	addrs, err := c.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("safehttp: resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("safehttp: resolve %s: no addresses", host)
	}
	// One forbidden answer refuses the host: a name that resolves to an
	// internal address is not a webhook target, whichever address a
	// later resolution would pick.
	for _, a := range addrs {
		if err := c.check(a); err != nil {
			return netip.Addr{}, fmt.Errorf("%w (resolved from %s)", err, host)
		}
	}
	return addrs[0].Unmap(), nil
}
