package nip98

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

const (
	testURL  = "https://chat.example/operator/communities"
	testHost = "chat.example"
)

// countingGuard is a real MemoryGuard that also counts Marks, to show which
// requests reached the replay guard.
type countingGuard struct {
	*MemoryGuard
	mu    sync.Mutex
	marks int
}

func (g *countingGuard) Mark(ctx context.Context, s ReplayScope, id string, ttl time.Duration) error {
	g.mu.Lock()
	g.marks++
	g.mu.Unlock()
	return g.MemoryGuard.Mark(ctx, s, id, ttl)
}

func newCountingGuard(tb testing.TB) *countingGuard {
	tb.Helper()
	m, err := NewMemoryGuard(1000, WithMemoryClock(fixedClock))
	if err != nil {
		tb.Fatal(err)
	}
	return &countingGuard{MemoryGuard: m}
}

func TestVerifyRules(t *testing.T) {
	sk := newKey(t)
	other := newKey(t)
	body := []byte(`{"host":"a.example"}`)
	get := baseToken(testURL, "GET")
	post := baseToken(testURL, "POST").with("payload", payloadOf(body))

	forgedPubKey := func() string {
		ev := get.event(t, sk)
		ev.PubKey = other.PublicKey()
		ev.ID = ev.ComputeID()
		return header(ev)
	}
	flippedSig := func() string {
		ev := get.event(t, sk)
		b := []byte(ev.Sig)
		if b[10] == '0' {
			b[10] = '1'
		} else {
			b[10] = '0'
		}
		ev.Sig = string(b)
		return header(ev)
	}
	idMismatch := func() string {
		ev := get.event(t, sk)
		ev.Tags = append(ev.Tags, nostr.Tag{"x", "y"})
		return header(ev)
	}
	b64 := func(enc *base64.Encoding) string {
		return "Nostr " + enc.EncodeToString(get.event(t, sk).AppendJSON(nil))
	}
	at := func(d time.Duration) string {
		tk := get
		tk.createdAt = testNow.Add(d).Unix()
		return tk.header(t, sk)
	}
	withURL := func(u string) string { return baseToken(u, "GET").header(t, sk) }

	cases := []struct {
		name    string
		auth    string
		method  string
		url     string
		body    []byte
		require bool
		want    error // nil = accepted
	}{
		{name: "valid GET", auth: get.header(t, sk)},
		{name: "valid POST with payload", auth: post.header(t, sk), method: "POST", body: body, require: true},
		{name: "missing header", auth: "", want: ErrMissing},
		{name: "blank header", auth: "   ", want: ErrMissing},
		{name: "other scheme", auth: "Bearer " + base64.StdEncoding.EncodeToString([]byte("x")), want: ErrMalformed},
		{name: "scheme only", auth: "Nostr", want: ErrMalformed},
		{name: "scheme without space", auth: "Nostr" + b64(base64.StdEncoding)[6:], want: ErrMalformed},
		{name: "scheme is case-insensitive", auth: "nOSTR " + b64(base64.StdEncoding)[6:]},
		{name: "several spaces after scheme", auth: "Nostr   " + b64(base64.StdEncoding)[6:]},
		{name: "raw std base64", auth: b64(base64.RawStdEncoding)},
		{name: "url-safe base64", auth: b64(base64.URLEncoding)},
		{name: "raw url-safe base64", auth: b64(base64.RawURLEncoding)},
		{name: "not base64", auth: "Nostr !!!notbase64!!!", want: ErrMalformed},
		{name: "mixed alphabets", auth: "Nostr ab+-", want: ErrMalformed},
		{name: "newline in token", auth: "Nostr " + b64(base64.StdEncoding)[6:20] + "\n" + b64(base64.StdEncoding)[20:], want: ErrMalformed},
		{name: "not an event", auth: "Nostr " + base64.StdEncoding.EncodeToString([]byte(`{"kind":27235}`)), want: ErrMalformed},
		{name: "too large", auth: "Nostr " + strings.Repeat("A", DefaultMaxHeaderSize), want: ErrTooLarge},
		{name: "wrong kind", auth: token{kind: 1, createdAt: testNow.Unix(), tags: get.tags}.header(t, sk), want: ErrWrongKind},
		{name: "forged signature (other pubkey)", auth: forgedPubKey(), want: ErrBadSignature},
		{name: "flipped signature", auth: flippedSig(), want: ErrBadSignature},
		{name: "id mismatch", auth: idMismatch(), want: ErrBadID},
		{name: "created 60s ago", auth: at(-60 * time.Second)},
		{name: "created 60s ahead", auth: at(60 * time.Second)},
		{name: "stale", auth: at(-61 * time.Second), want: ErrStale},
		{name: "future", auth: at(61 * time.Second), want: ErrStale},
		{name: "far future", auth: at(1000 * time.Hour), want: ErrStale},
		{name: "u other host", auth: withURL("https://other.example/operator/communities"), want: ErrWrongURL},
		{name: "u other path", auth: withURL("https://chat.example/operator/communities/archive"), want: ErrWrongURL},
		{name: "u other scheme", auth: withURL("http://chat.example/operator/communities"), want: ErrWrongURL},
		{name: "u other port", auth: withURL("https://chat.example:8443/operator/communities"), want: ErrWrongURL},
		{name: "u with query the request lacks", auth: withURL(testURL + "?x=1"), want: ErrWrongURL},
		{name: "u trailing slash", auth: withURL(testURL + "/")},
		{name: "u uppercase scheme and host", auth: withURL("HTTPS://Chat.Example/operator/communities")},
		{name: "u default port", auth: withURL("https://chat.example:443/operator/communities")},
		{name: "u trailing dot", auth: withURL("https://chat.example./operator/communities")},
		{name: "u path is case-sensitive", auth: withURL("https://chat.example/Operator/communities"), want: ErrWrongURL},
		{name: "u with userinfo", auth: withURL("https://me@chat.example/operator/communities"), want: ErrWrongURL},
		{name: "u with fragment", auth: withURL(testURL + "#x"), want: ErrWrongURL},
		{name: "u relative", auth: withURL("/operator/communities"), want: ErrWrongURL},
		{name: "u websocket scheme", auth: withURL("wss://chat.example/operator/communities"), want: ErrWrongURL},
		{name: "no u tag", auth: get.without("u").header(t, sk), want: ErrWrongURL},
		{name: "u tag without value", auth: get.without("u").with("u").header(t, sk), want: ErrWrongURL},
		{name: "two u tags", auth: get.with("u", testURL).header(t, sk), want: ErrWrongURL},
		{name: "method lowercase", auth: baseToken(testURL, "get").header(t, sk)},
		{name: "wrong method", auth: baseToken(testURL, "DELETE").header(t, sk), want: ErrWrongMethod},
		{name: "no method tag", auth: get.without("method").header(t, sk), want: ErrWrongMethod},
		{name: "two method tags", auth: get.with("method", "GET").header(t, sk), want: ErrWrongMethod},
		{name: "wrong payload", auth: baseToken(testURL, "POST").with("payload", payloadOf([]byte("other"))).header(t, sk), method: "POST", body: body, want: ErrPayload},
		{name: "payload not hex", auth: baseToken(testURL, "POST").with("payload", "zz").header(t, sk), method: "POST", body: body, want: ErrPayload},
		{name: "payload without value", auth: baseToken(testURL, "POST").with("payload").header(t, sk), method: "POST", body: body, want: ErrPayload},
		{name: "two payload tags", auth: post.with("payload", payloadOf(body)).header(t, sk), method: "POST", body: body, want: ErrPayload},
		{name: "payload uppercase hex", auth: baseToken(testURL, "POST").with("payload", strings.ToUpper(payloadOf(body))).header(t, sk), method: "POST", body: body},
		{name: "payload checked when present though not required", auth: baseToken(testURL, "POST").with("payload", payloadOf(nil)).header(t, sk), method: "POST", body: body, want: ErrPayload},
		{name: "payload of empty body", auth: get.with("payload", payloadOf(nil)).header(t, sk), require: true},
		{name: "payload missing when required", auth: baseToken(testURL, "POST").header(t, sk), method: "POST", body: body, require: true, want: ErrPayloadRequired},
		{name: "payload missing when not required", auth: baseToken(testURL, "POST").header(t, sk), method: "POST", body: body},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newCountingGuard(t)
			v := newVerifier(t, WithReplayGuard(g))
			method := c.method
			if method == "" {
				method = "GET"
			}
			url := c.url
			if url == "" {
				url = testURL
			}
			pk, err := v.Verify(context.Background(), Request{
				Authorization: c.auth, Method: method, URL: url, Body: c.body,
				RequirePayload: c.require, Scope: communityScope(),
			})
			if c.want == nil {
				if err != nil {
					t.Fatalf("Verify: %v (cause: %v)", err, errors.Unwrap(err))
				}
				if pk != sk.PublicKey() {
					t.Fatalf("pubkey = %s, want the signer's", pk)
				}
				if g.marks != 1 {
					t.Fatalf("guard marked %d times, want 1", g.marks)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify error = %v, want %v", err, c.want)
			}
			assertClientSafe(t, err, c.want)
			wantMsg := c.want.Error()
			if slices.Contains([]error{ErrWrongURL, ErrBadID, ErrWrongKind, ErrBadSignature}, c.want) {
				wantMsg = ErrBadSignature.Error() // one answer for a token not valid here
			}
			if got := ClientMessage(err); got != wantMsg {
				t.Fatalf("ClientMessage = %q, want %q", got, wantMsg)
			}
			if pk != "" {
				t.Fatalf("pubkey %q returned with an error", pk)
			}
			if g.marks != 0 {
				t.Fatalf("an invalid request reached the replay guard (%d marks): verify before marking", g.marks)
			}
		})
	}
}

// TestClientMessage: errors Verify does not return answer as a bad
// signature; a wrapped *Error answers its reason.
func TestClientMessage(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want error
	}{
		"plain error":       {errors.New("boom: 10.0.0.1"), ErrBadSignature},
		"nil":               {nil, ErrBadSignature},
		"wrapped stale":     {fmt.Errorf("api: %w", &Error{Reason: ErrStale, Cause: errors.New("at 10.0.0.1")}), ErrStale},
		"wrapped url":       {fmt.Errorf("api: %w", &Error{Reason: ErrWrongURL}), ErrBadSignature},
		"replay with cause": {&Error{Reason: ErrReplayUnavailable, Cause: errors.New("redis: 127.0.0.1:6379")}, ErrReplayUnavailable},
	} {
		if got := ClientMessage(tc.err); got != tc.want.Error() {
			t.Errorf("%s: ClientMessage = %q, want %q", name, got, tc.want.Error())
		}
	}
}

// assertClientSafe checks that err is an *Error whose text is exactly the
// reason's and reveals nothing of the server's expectations.
func assertClientSafe(t *testing.T, err error, reason error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not *nip98.Error", err)
	}
	if err.Error() != reason.Error() {
		t.Fatalf("error text %q, want exactly %q", err.Error(), reason.Error())
	}
	if !strings.HasPrefix(err.Error(), "NIP-98: ") {
		t.Fatalf("error text %q lacks the NIP-98 prefix", err.Error())
	}
	for _, s := range []string{testHost, "operator/communities", "127.0.0.1", "6379"} {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("error text %q reveals %q", err.Error(), s)
		}
	}
}

func TestVerifyLoopbackFolding(t *testing.T) {
	sk := newKey(t)
	v := newVerifier(t)
	for _, c := range []struct {
		expected, u string
		ok          bool
	}{
		{"http://localhost:3000/x", "http://127.0.0.1:3000/x", true},
		{"http://localhost:3000/x", "http://[::1]:3000/x", true},
		{"http://localhost:3000/x", "http://[0:0:0:0:0:0:0:1]:3000/x", true},
		{"http://127.0.0.1:3000/x", "http://localhost:3000/x/", true},
		{"http://localhost/x", "http://127.0.0.1:80/x", true},
		{"http://localhost:3000/x", "http://127.0.0.1:3001/x", false},
		{"http://localhost:3000/x", "http://127.0.0.2:3000/x", false},
	} {
		_, err := v.Verify(context.Background(), Request{
			Authorization: baseToken(c.u, "GET").header(t, sk), Method: "GET", URL: c.expected, Scope: communityScope(),
		})
		if c.ok && err != nil {
			t.Errorf("u %s for %s: %v", c.u, c.expected, err)
		}
		if !c.ok && !errors.Is(err, ErrWrongURL) {
			t.Errorf("u %s for %s: err %v, want ErrWrongURL", c.u, c.expected, err)
		}
	}
}

func TestVerifyQueryKept(t *testing.T) {
	sk := newKey(t)
	v := newVerifier(t)
	exp := "https://chat.example/operator/communities/availability?host=a.example"
	for u, ok := range map[string]bool{
		exp: true,
		"https://chat.example/operator/communities/availability?host=b.example":  false,
		"https://chat.example/operator/communities/availability":                 false,
		"https://chat.example/operator/communities/availability/?host=a.example": true,
	} {
		_, err := v.Verify(context.Background(), Request{
			Authorization: baseToken(u, "GET").header(t, sk), Method: "GET", URL: exp, Scope: communityScope(),
		})
		if (err == nil) != ok {
			t.Errorf("u %s: err %v, want ok=%v", u, err, ok)
		}
	}
}

func TestVerifyInvalidExpectedURLFailsClosed(t *testing.T) {
	sk := newKey(t)
	v := newVerifier(t)
	_, err := v.Verify(context.Background(), Request{
		Authorization: baseToken("/x", "GET").header(t, sk), Method: "GET", URL: "/x", Scope: communityScope(),
	})
	if !errors.Is(err, ErrWrongURL) || !errors.Is(err, errExpectedURL) {
		t.Fatalf("err %v, want ErrWrongURL caused by errExpectedURL", err)
	}
}

func TestVerifyReplay(t *testing.T) {
	sk := newKey(t)
	v := newVerifier(t)
	auth := baseToken(testURL, "GET").header(t, sk)
	a, b := communityScope(), communityScope()
	req := Request{Authorization: auth, Method: "GET", URL: testURL, Scope: a}
	if _, err := v.Verify(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	_, err := v.Verify(context.Background(), req)
	if !errors.Is(err, ErrReplayed) {
		t.Fatalf("second use: %v, want ErrReplayed", err)
	}
	assertClientSafe(t, err, ErrReplayed)

	// The same event re-encoded is the same event.
	ev, _ := ParseHeader(auth)
	req.Authorization = "Nostr " + base64.RawURLEncoding.EncodeToString(ev.AppendJSON(nil))
	if _, err := v.Verify(context.Background(), req); !errors.Is(err, ErrReplayed) {
		t.Fatalf("re-encoded replay: %v, want ErrReplayed", err)
	}

	// Another community is another replay scope, and so is the operator's.
	req.Scope = b
	if _, err := v.Verify(context.Background(), req); err != nil {
		t.Fatalf("same event in another community: %v", err)
	}
	req.Scope = OperatorScope()
	if _, err := v.Verify(context.Background(), req); err != nil {
		t.Fatalf("same event in the operator scope: %v", err)
	}
	if _, err := v.Verify(context.Background(), req); !errors.Is(err, ErrReplayed) {
		t.Fatalf("operator replay: %v, want ErrReplayed", err)
	}
}

// TestVerifyBeforeMark presents one event first in a request it does not
// fit, then in the one it was made for: the failed attempt must not have
// consumed the id.
func TestVerifyBeforeMark(t *testing.T) {
	sk := newKey(t)
	body := []byte(`{"a":1}`)
	ev := baseToken(testURL, "POST").with("payload", payloadOf(body)).event(t, sk)
	auth := header(ev)
	good := Request{Authorization: auth, Method: "POST", URL: testURL, Body: body, RequirePayload: true, Scope: communityScope()}
	bad := map[string]func(Request) Request{
		"wrong method": func(r Request) Request { r.Method = "PUT"; return r },
		"wrong url":    func(r Request) Request { r.URL = "https://chat.example/other"; return r },
		"wrong body":   func(r Request) Request { r.Body = []byte("{}"); return r },
		"no scope":     func(r Request) Request { r.Scope = ReplayScope{}; return r },
	}
	for name, mutate := range bad {
		t.Run(name, func(t *testing.T) {
			v := newVerifier(t)
			if _, err := v.Verify(context.Background(), mutate(good)); err == nil {
				t.Fatal("mutated request accepted")
			}
			if _, err := v.Verify(context.Background(), good); err != nil {
				t.Fatalf("the real request after a failed one: %v", err)
			}
		})
	}
	t.Run("stale then fresh clock", func(t *testing.T) {
		now := testNow.Add(5 * time.Minute)
		v, err := NewVerifier(WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(context.Background(), good); !errors.Is(err, ErrStale) {
			t.Fatalf("err %v, want ErrStale", err)
		}
		now = testNow
		if _, err := v.Verify(context.Background(), good); err != nil {
			t.Fatal(err)
		}
	})
}

func TestVerifyZeroScopeRefused(t *testing.T) {
	sk := newKey(t)
	v := newVerifier(t)
	_, err := v.Verify(context.Background(), Request{Authorization: baseToken(testURL, "GET").header(t, sk), Method: "GET", URL: testURL})
	if !errors.Is(err, ErrReplayUnavailable) {
		t.Fatalf("err %v, want ErrReplayUnavailable", err)
	}
}

func TestVerifyGuardFullFailsClosed(t *testing.T) {
	sk := newKey(t)
	g, err := NewMemoryGuard(2, WithMemoryClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	v := newVerifier(t, WithReplayGuard(g))
	scope := communityScope()
	for i := 0; i < 2; i++ {
		if _, err := v.Verify(context.Background(), Request{Authorization: baseToken(testURL, "GET").header(t, sk), Method: "GET", URL: testURL, Scope: scope}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = v.Verify(context.Background(), Request{Authorization: baseToken(testURL, "GET").header(t, sk), Method: "GET", URL: testURL, Scope: scope})
	if !errors.Is(err, ErrReplayUnavailable) {
		t.Fatalf("full guard: %v, want ErrReplayUnavailable", err)
	}
	assertClientSafe(t, err, ErrReplayUnavailable)
}

func TestVerifyWindowOption(t *testing.T) {
	sk := newKey(t)
	v := newVerifier(t, WithWindow(5*time.Second))
	tk := baseToken(testURL, "GET")
	tk.createdAt = testNow.Add(-6 * time.Second).Unix()
	if _, err := v.Verify(context.Background(), Request{Authorization: tk.header(t, sk), Method: "GET", URL: testURL, Scope: communityScope()}); !errors.Is(err, ErrStale) {
		t.Fatalf("err %v, want ErrStale with a 5s window", err)
	}
}

func TestVerifyMaxHeaderSizeOption(t *testing.T) {
	sk := newKey(t)
	v := newVerifier(t, WithMaxHeaderSize(512))
	tk := baseToken(testURL, "GET").with("pad", strings.Repeat("x", 600))
	if _, err := v.Verify(context.Background(), Request{Authorization: tk.header(t, sk), Method: "GET", URL: testURL, Scope: communityScope()}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
}

func TestNewVerifierRejectsBadOptions(t *testing.T) {
	for name, o := range map[string]Option{
		"window 0":          WithWindow(0),
		"window too wide":   WithWindow(MaxWindow + time.Second),
		"nil clock":         WithClock(nil),
		"nil sig verifier":  WithSignatureVerifier(nil),
		"nil guard":         WithReplayGuard(nil),
		"tiny header limit": WithMaxHeaderSize(10),
		"huge header limit": WithMaxHeaderSize(2 << 20),
		"nil option":        nil,
	} {
		if _, err := NewVerifier(o); err == nil {
			t.Errorf("%s: NewVerifier accepted it", name)
		}
	}
}

func TestVerifySharedSignatureVerifier(t *testing.T) {
	sv, err := nostr.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	sk := newKey(t)
	v := newVerifier(t, WithSignatureVerifier(sv))
	if _, err := v.Verify(context.Background(), Request{Authorization: baseToken(testURL, "GET").header(t, sk), Method: "GET", URL: testURL, Scope: communityScope()}); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPRequestAndExpectedURL(t *testing.T) {
	sk := newKey(t)
	v := newVerifier(t)
	body := []byte(`{"host":"a.example","create_only":true}`)
	u := "https://chat.example/operator/communities?dry=1"
	r := httptest.NewRequest(http.MethodPost, "/operator/communities?dry=1", strings.NewReader(string(body)))
	r.Header.Set("Authorization", baseToken(u, "POST").with("payload", payloadOf(body)).header(t, sk))
	if got := ExpectedURL("https://chat.example/", r); got != u {
		t.Fatalf("ExpectedURL = %q, want %q", got, u)
	}
	req := HTTPRequest(r, ExpectedURL("https://chat.example", r), body)
	req.RequirePayload = true
	req.Scope = OperatorScope()
	if pk, err := v.Verify(context.Background(), req); err != nil || pk != sk.PublicKey() {
		t.Fatalf("Verify = %q, %v", pk, err)
	}

	// Two Authorization headers are refused.
	r.Header.Add("Authorization", baseToken(u, "POST").with("payload", payloadOf(body)).header(t, sk))
	req = HTTPRequest(r, ExpectedURL("https://chat.example", r), body)
	req.Scope = OperatorScope()
	if _, err := v.Verify(context.Background(), req); !errors.Is(err, ErrMalformed) {
		t.Fatalf("two headers: %v, want ErrMalformed", err)
	}
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://chat.example":                "https://chat.example",
		"https://chat.example/":               "https://chat.example",
		"HTTPS://CHAT.EXAMPLE/A/":             "https://chat.example/A",
		"https://chat.example:443/a?b=C":      "https://chat.example/a?b=C",
		"http://chat.example:80/a?":           "http://chat.example/a",
		"http://127.0.0.1:8080/":              "http://localhost:8080",
		"http://[::1]/p":                      "http://localhost/p",
		"https://chat.example./a/b/":          "https://chat.example/a/b",
		"https://chat.example/a%20b":          "https://chat.example/a%20b",
		"https://chat.example:8443/a//":       "https://chat.example:8443/a",
		"https://[2001:DB8::1]:8443/x?y=z&w=": "https://[2001:db8::1]:8443/x?y=z&w=",
	} {
		got, err := NormalizeURL(in)
		if err != nil || got != want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", in, got, err, want)
		}
		again, err := NormalizeURL(got)
		if err != nil || again != got {
			t.Errorf("NormalizeURL not idempotent on %q: %q, %v", got, again, err)
		}
	}
	for _, in := range []string{
		"", "chat.example/a", "/a", "ftp://chat.example/a", "wss://chat.example", "https://",
		"https://u:p@chat.example/", "https://chat.example/#f", "https://chat.example/a b",
		"https:chat.example", "https://chat.example:0/", "https://chat.example:99999/",
		"https://chat.example:/", "https://" + strings.Repeat("a", 300) + "/",
	} {
		if got, err := NormalizeURL(in); err == nil {
			t.Errorf("NormalizeURL(%q) = %q, want an error", in, got)
		}
	}
}

func TestParseHeaderRoundTrip(t *testing.T) {
	sk := newKey(t)
	ev := baseToken(testURL, "GET").event(t, sk)
	got, err := ParseHeader(header(ev))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != ev.ID || got.Sig != ev.Sig {
		t.Fatal("round trip changed the event")
	}
}
