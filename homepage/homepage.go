// Package homepage serves the page people see when they open a
// community's address in a browser, as a feature mounted on a relay
// (buzz.WithFeature(homepage.New())): the community's name, description and
// icon (its profile, else the relay's — the same fields NIP-11 serves for
// that host), the ws(s):// URL to paste into a client, the supported NIPs
// (exactly NIP-11's supported_nips) and how to fetch the NIP-11 document.
//
// The page loads nothing from elsewhere (inline style, no scripts, no
// fonts) and says so in its Content-Security-Policy; every value is
// escaped for its context by html/template, and an icon URL that is not
// http(s) is replaced by "#ZgotmplZ". Requests for an unmapped host never
// reach it (the relay's fixed 404).
package homepage

import (
	"bytes"
	"html/template"
	"net/http"
	"strings"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/tenant"
)

// csp is the page's Content-Security-Policy, also in its <meta>.
const csp = "default-src 'none'; img-src https: http:; style-src 'unsafe-inline'"

// page is the home page served on a community's hosts. It loads
// nothing from elsewhere (inline style, no scripts, no fonts); html/template
// escapes every value for its context, and an icon URL that is not http(s)
// is replaced by "#ZgotmplZ".
var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src https: http:; style-src 'unsafe-inline'">
<title>{{.Name}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f;background:#fafafa;line-height:1.5}
header{display:flex;align-items:center;gap:1rem}
header img{width:64px;height:64px;border-radius:12px;object-fit:cover}
h1{margin:0;font-size:1.8rem}
.desc{white-space:pre-wrap}
code{display:block;padding:.75rem 1rem;background:#fff;border:1px solid #ddd;border-radius:8px;font-size:1.05rem;overflow-wrap:anywhere;user-select:all}
.nips{color:#555;padding-left:1.25rem}
footer{margin-top:2rem;font-size:.9rem;color:#666}
</style>
</head>
<body>
<header>{{if .Icon}}<img src="{{.Icon}}" alt="">{{end}}<h1>{{.Name}}</h1></header>
{{if .Description}}<p class="desc">{{.Description}}</p>{{end}}
<p>This is a <a href="https://github.com/nostr-protocol/nostr">Nostr</a> relay. Paste this address into your Nostr client:</p>
<code>{{.URL}}</code>
<p>Supported NIPs:</p>
<ul class="nips" id="nips">{{range .NIPs}}<li data-nip="{{.Number}}"><a href="https://github.com/nostr-protocol/nips/blob/master/{{printf "%02d" .Number}}.md">NIP-{{printf "%02d" .Number}}</a> {{.Title}}</li>{{end}}</ul>
<p>Relay information (<a href="https://github.com/nostr-protocol/nips/blob/master/11.md">NIP-11</a>): <code>curl -H 'Accept: application/nostr+json' {{.HTTPURL}}</code></p>
{{if .Contact}}<footer>Contact: {{.Contact}}</footer>{{end}}
</body>
</html>
`))

type pageData struct {
	Name, Description, Icon, Contact string
	URL, HTTPURL                     string
	NIPs                             []nip11.NIP
}

// Feature serves the home page; New makes one.
type Feature struct {
	h buzz.Host
}

// New returns the home page feature, to mount with buzz.WithFeature.
func New() *Feature { return &Feature{} }

// Mount serves the page at "/" on every community host.
func (f *Feature) Mount(h buzz.Host) error {
	f.h = h
	h.HandleCommunity("GET /{$}", f.serve)
	return nil
}

// serve renders the page for tc's community. Only mapped hosts get here
// (Host.HandleCommunity); the rest get the relay's fixed 404.
func (f *Feature) serve(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	doc := f.h.Document(req.Context(), tc)
	wsURL := f.h.RelayURL(req, tc)
	httpURL := "http" + strings.TrimPrefix(wsURL, "ws") + "/" // ws→http, wss→https
	var buf bytes.Buffer
	err := page.Execute(&buf, pageData{
		Name: doc.Name, Description: doc.Description, Icon: doc.Icon, Contact: doc.Contact,
		URL: wsURL, HTTPURL: httpURL,
		NIPs: f.h.NIPs(), // the table NIP-11's supported_nips is read from
	})
	if err != nil {
		f.h.Logger().ErrorContext(req.Context(), "homepage: render", "err", err)
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", csp)
	hd.Set("Referrer-Policy", "no-referrer")
	if req.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(buf.Bytes())
}
