package nip98

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/buzzrelay/buzz/tenant"
)

// maxURLLen bounds the URLs NormalizeURL accepts.
const maxURLLen = 8 << 10

var errBadURL = errors.New("nip98: not an absolute http(s) URL without userinfo or fragment")

// NormalizeURL returns the form in which a u tag and the URL a server
// expects are compared:
//
//   - the scheme must be http or https and is lowercased;
//   - the host follows tenant.NormalizeHost: lowercased, a default port
//     (":80" or ":443") and one trailing dot removed, 127.0.0.1 and [::1]
//     folded to localhost (a non-default port is kept);
//   - the path is kept as escaped, except that trailing "/"s are removed,
//     so "https://h/" equals "https://h" and "https://h/p/" equals
//     "https://h/p" (all of them, so that the result normalizes to itself);
//   - the query is kept byte for byte (an empty "?" is dropped);
//   - userinfo, a fragment, an opaque URL or a missing host is an error.
//
// Errors never repeat the input.
func NormalizeURL(raw string) (string, error) {
	if raw == "" || len(raw) > maxURLLen || strings.ContainsAny(raw, "# \t\r\n") {
		return "", errBadURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errBadURL
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Opaque != "" || u.User != nil || u.Host == "" {
		return "", errBadURL
	}
	host, err := tenant.NormalizeHost(u.Host)
	if err != nil {
		return "", errBadURL
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	var b strings.Builder
	b.Grow(len(u.Scheme) + 3 + len(host) + len(path) + 1 + len(u.RawQuery))
	b.WriteString(u.Scheme)
	b.WriteString("://")
	b.WriteString(host)
	b.WriteString(path)
	if u.RawQuery != "" {
		b.WriteByte('?')
		b.WriteString(u.RawQuery)
	}
	return b.String(), nil
}

// ExpectedURL returns the absolute URL a NIP-98 u tag must name for the
// server request r: origin (a scheme and authority such as
// "https://chat.example", for a community the scheme of the relay's public
// URL and the community's host; for the operator API its configured origin)
// followed by the request's path and query as the client sent them. A
// trailing "/" of origin is ignored.
func ExpectedURL(origin string, r *http.Request) string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(origin, "/"))
	b.WriteString(r.URL.EscapedPath())
	if r.URL.RawQuery != "" {
		b.WriteByte('?')
		b.WriteString(r.URL.RawQuery)
	}
	return b.String()
}
