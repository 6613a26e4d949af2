package buzz

import (
	"bytes"
	"context"
	"html/template"
	"net/http"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// CommunityProfiles supplies each community's own self-description.
// store/sqlite and store/postgres implement it (store.ProfileStore).
type CommunityProfiles interface {
	CommunityProfile(ctx context.Context, c tenant.CommunityID) (store.CommunityProfile, error)
}

// pageTemplate is the home page served on a community's hosts. It loads
// nothing from elsewhere (inline style, no scripts, no fonts); html/template
// escapes every value for its context, and an icon URL that is not http(s)
// is replaced by "#ZgotmplZ".
var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
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
	NIPs                             []NIP
}

// serveHomePage serves the page for people who open the relay's address in
// a browser: the community's name, description and icon (its profile, else
// the relay's), the ws(s):// URL to paste into a client, the supported
// NIPs and how to fetch the NIP-11 document. Only mapped hosts get here
// (HandleCommunity); the rest get the fixed 404.
func (r *Relay) serveHomePage(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	doc := r.documentFor(req.Context(), tc)
	scheme, httpScheme := r.cfg.relayScheme, "http"
	if scheme == "" {
		scheme = "ws"
		if req.TLS != nil {
			scheme = "wss"
		}
	}
	if scheme == "wss" {
		httpScheme = "https"
	}
	var buf bytes.Buffer
	err := pageTemplate.Execute(&buf, pageData{
		Name: doc.Name, Description: doc.Description, Icon: doc.Icon, Contact: doc.Contact,
		URL: scheme + "://" + tc.Host(), HTTPURL: httpScheme + "://" + tc.Host() + "/",
		NIPs: r.NIPs(), // the table NIP-11's supported_nips is read from
	})
	if err != nil {
		r.log.ErrorContext(req.Context(), "buzz: home page", "err", err)
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; img-src https: http:; style-src 'unsafe-inline'")
	h.Set("Referrer-Policy", "no-referrer")
	if req.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(buf.Bytes())
}
