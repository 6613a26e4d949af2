package buzz

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// get fetches "/" from the test server naming host, with accept.
func (tr *testRelay) get(t *testing.T, host, accept string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, tr.srv.URL+"/", nil)
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
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestCommunityIdentity: a community's profile is served in NIP-11 for its
// own host only; another community's host, and an unmapped host, show none
// of it. (The home page shows the same fields: package homepage.)
func TestCommunityIdentity(t *testing.T) {
	tr := newTestRelay(t, WithInfo(Info{Name: "relay-wide", Description: "the relay", Contact: "mailto:ops@relay.example"}))
	ctx := context.Background()
	const hostB = "b.example"
	if _, _, err := tr.store.EnsureCommunity(ctx, hostB); err != nil {
		t.Fatal(err)
	}
	profile := store.CommunityProfile{
		Name:        `Team <script>alert("A")</script>`,
		Description: "Team A's & friends' relay",
		Icon:        "https://a.example/icon.png?x=1&y=2",
		Contact:     "mailto:team-a@a.example",
	}
	if err := tr.store.SetCommunityProfile(ctx, tr.tc.Community(), profile); err != nil {
		t.Fatal(err)
	}
	document := func(host string) (nip11.Document, string) {
		t.Helper()
		st, _, body := tr.get(t, host, "application/nostr+json")
		if st != http.StatusOK {
			t.Fatalf("NIP-11 for %s: %d", host, st)
		}
		var d nip11.Document
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
		return d, body
	}
	d, _ := document(tr.host)
	if d.Name != profile.Name || d.Description != profile.Description || d.Icon != profile.Icon || d.Contact != profile.Contact {
		t.Fatalf("A's NIP-11 = %+v", d)
	}
	if len(d.SupportedNIPs) == 0 || d.Limitation.MaxLimit == 0 {
		t.Fatalf("A's NIP-11 lost the relay's fields: %+v", d)
	}
	for _, host := range []string{hostB, "unmapped.example"} {
		d, body := document(host)
		if d.Name != "relay-wide" || d.Contact != "mailto:ops@relay.example" || d.Icon != "" {
			t.Fatalf("NIP-11 for %s = %+v, want the relay-wide document", host, d)
		}
		for _, v := range []string{"Team", "team-a", "a.example/icon"} {
			if strings.Contains(body, v) {
				t.Fatalf("NIP-11 for %s shows A's %q: %s", host, v, body)
			}
		}
	}

	// No home page mounted (package homepage): "/" on a mapped host is the
	// mux's plain 404, on an unmapped one the fixed 404.
	if st, _, body := tr.get(t, tr.host, "text/html"); st != http.StatusNotFound || strings.TrimSpace(body) != "404 page not found" {
		t.Fatalf("/ without a home page: %d %q", st, body)
	}
	// Any other path: the same fixed 404 on an unmapped host; a mapped
	// host's unknown path is a plain 404 that says nothing of hosts.
	for host, want := range map[string]string{"unmapped.example": tenant.ErrUnmappedHost.Error(), tr.host: "404 page not found"} {
		resp, err := http.Get(tr.srv.URL + "/no/such/route")
		if host != tr.host {
			req, _ := http.NewRequest(http.MethodGet, tr.srv.URL+"/no/such/route", nil)
			req.Host = host
			resp, err = http.DefaultClient.Do(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.TrimSpace(string(b)) != want {
			t.Fatalf("%s /no/such/route: %d %q, want %q", host, resp.StatusCode, b, want)
		}
	}
}
