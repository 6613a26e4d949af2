package buzz

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// The tests of this package that read or write over HTTP mount the HTTP
// API (package httpapi, whose own tests are its contract). Package httpapi
// imports this one, so the feature is given by an external test file
// (httpapi_feature_test.go) through NewHTTPAPI.

// NewHTTPAPI returns a new HTTP API feature (httpapi.New).
var NewHTTPAPI func() Feature

// The routes of the HTTP API.
const (
	queryPath  = "/query"
	countPath  = "/count"
	eventsPath = "/events"
)

// withHTTPAPI authenticates HTTP requests with v and mounts the HTTP API,
// as buzzd does.
func withHTTPAPI(v *nip98.Verifier) Option {
	return func(c *config) error {
		if err := WithHTTPAuth(v)(c); err != nil {
			return err
		}
		return WithFeature(NewHTTPAPI())(c)
	}
}

// eventResult is the answer of POST /events.
type eventResult struct {
	EventID  string `json:"event_id"`
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

// nip98Token returns an Authorization header value signed by s for a POST
// of body to url.
func nip98Token(t testing.TB, s *signer, url string, body []byte, extra ...nostr.Tag) string {
	t.Helper()
	sum := sha256.Sum256(body)
	// Two requests of one second with one body would be the same event:
	// a nonce keeps test tokens distinct.
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	tags := append([]nostr.Tag{{"u", url}, {"method", "POST"}, {"payload", hex.EncodeToString(sum[:])}, {"nonce", hex.EncodeToString(nonce)}}, extra...)
	ev := s.Event(nostr.KindHTTPAuth, now(), "", tags...)
	return nip98.Scheme + " " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil))
}

// api posts body to path on the pod with Host host, signed by s for that
// host.
func (p *pod) api(t testing.TB, s *signer, host, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Authorization", nip98Token(t, s, "http://"+host+path, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// publishHTTP posts ev to /events on host, signed by s.
func (p *pod) publishHTTP(t testing.TB, s *signer, host string, ev *nostr.Event) eventResult {
	t.Helper()
	code, b := p.api(t, s, host, eventsPath, ev.AppendJSON(nil))
	var res eventResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("/events answered %d %s", code, b)
	}
	if res.Accepted != (code == http.StatusOK) && !strings.HasPrefix(res.Message, "duplicate:") {
		t.Fatalf("/events status %d for %+v", code, res)
	}
	return res
}

// startAPIPod serves st's host with the HTTP API and the test relay key.
func startAPIPod(t testing.TB, st store.Backend, host string) *pod {
	t.Helper()
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	return startPod(t, st, host, withHTTPAPI(v), WithRelayKey(testMaster))
}
