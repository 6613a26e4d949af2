package homepage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/homepage"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// get fetches path from r's server for host with the Accept header accept.
func get(t *testing.T, r *relaytest.Relay, method, host, path, accept string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.Srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

var listedNIP = regexp.MustCompile(`data-nip="(\d+)"`)

// TestHomePage: the page of a community's host shows that community's
// profile, escaped, with the relay's NIPs exactly as NIP-11 lists them;
// another community's host shows the relay's own description and nothing
// of the first; an unmapped host gets the relay's fixed 404.
func TestHomePage(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		ctx := context.Background()
		r := relaytest.Serve(t, st, buzz.WithFeature(homepage.New()),
			buzz.WithInfo(buzz.Info{Name: "relay-wide", Description: "the relay", Contact: "mailto:ops@relay.example"}))
		const hostB = "b.example"
		if _, _, err := st.EnsureCommunity(ctx, hostB); err != nil {
			t.Fatal(err)
		}
		tc, err := tenant.Bind(ctx, st, r.Host)
		if err != nil {
			t.Fatal(err)
		}
		ps, ok := st.(store.ProfileStore)
		if !ok {
			t.Fatalf("%T keeps no community profiles", st)
		}
		if err := ps.SetCommunityProfile(ctx, tc.Community(), store.CommunityProfile{
			Name:        `Team <script>alert("A")</script>`,
			Description: "Team A's & friends' relay",
			Icon:        "https://a.example/icon.png?x=1&y=2",
			Contact:     "mailto:team-a@a.example",
		}); err != nil {
			t.Fatal(err)
		}

		code, h, page := get(t, r, http.MethodGet, r.Host, "/", "text/html,application/xhtml+xml")
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Fatalf("page: %d %q", code, h.Get("Content-Type"))
		}
		if csp := h.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") {
			t.Fatalf("Content-Security-Policy %q", csp)
		}
		for _, want := range []string{
			`Team &lt;script&gt;alert(&#34;A&#34;)&lt;/script&gt;`, // escaped, never markup
			"Team A&#39;s &amp; friends&#39; relay",
			`src="https://a.example/icon.png?x=1&amp;y=2"`,
			"<code>ws://" + r.Host + "</code>", "http://" + r.Host + "/", "mailto:team-a@a.example", ">NIP-42<", "11.md",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("page lacks %q:\n%s", want, page)
			}
		}
		if strings.Contains(page, "<script") || strings.Contains(page, `src="//`) || strings.Contains(page, "<link") {
			t.Fatalf("page holds markup from the profile or external assets:\n%s", page)
		}

		// The NIPs on the page are NIP-11's supported_nips, in order.
		code, _, body := get(t, r, http.MethodGet, r.Host, "/", "application/nostr+json")
		var doc nip11.Document
		if code != http.StatusOK || json.Unmarshal([]byte(body), &doc) != nil {
			t.Fatalf("NIP-11: %d %s", code, body)
		}
		var onPage []int
		for _, m := range listedNIP.FindAllStringSubmatch(page, -1) {
			n, _ := strconv.Atoi(m[1])
			onPage = append(onPage, n)
		}
		if !slices.Equal(onPage, doc.SupportedNIPs) {
			t.Fatalf("page lists NIPs %v, NIP-11 %v", onPage, doc.SupportedNIPs)
		}

		if code, _, page := get(t, r, http.MethodGet, hostB, "/", "text/html"); code != http.StatusOK || strings.Contains(page, "Team") || !strings.Contains(page, "relay-wide") || !strings.Contains(page, "ws://"+hostB) {
			t.Fatalf("B's page: %d\n%s", code, page)
		}
		if code, _, body := get(t, r, http.MethodGet, "unmapped.example", "/", "text/html"); code != http.StatusNotFound || strings.TrimSpace(body) != tenant.ErrUnmappedHost.Error() {
			t.Fatalf("unmapped host: %d %q", code, body)
		}
		if code, h, body := get(t, r, http.MethodHead, r.Host, "/", "text/html"); code != http.StatusOK || body != "" || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Fatalf("HEAD: %d %q %q", code, h.Get("Content-Type"), body)
		}
		if code, _, _ := get(t, r, http.MethodGet, r.Host, "/index.html", "text/html"); code != http.StatusNotFound {
			t.Fatalf("GET /index.html: %d, want 404 (the page is only at /)", code)
		}
	})
}

// TestHomePageFollowsRelayURL: with WithRelayURL's wss scheme the page
// gives wss:// and https:// addresses.
func TestHomePageFollowsRelayURL(t *testing.T) {
	st := relaytest.Embedded(t)
	r := relaytest.Serve(t, st, buzz.WithFeature(homepage.New()), buzz.WithRelayURL("wss://relay.example"))
	_, _, page := get(t, r, http.MethodGet, r.Host, "/", "text/html")
	for _, want := range []string{"<code>wss://" + r.Host + "</code>", fmt.Sprintf("https://%s/", r.Host)} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}
