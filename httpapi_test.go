package buzz

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/testenv"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nip98/redisreplay"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// nip98Token returns an Authorization header value signed by s for a POST
// of body to url.
func nip98Token(t testing.TB, s *signer, url string, body []byte, extra ...nostr.Tag) string {
	t.Helper()
	sum := sha256.Sum256(body)
	// Two requests of one second with one body would be the same event:
	// a nonce keeps test tokens distinct (a replay is tested explicitly).
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	tags := append([]nostr.Tag{{"u", url}, {"method", "POST"}, {"payload", hex.EncodeToString(sum[:])}, {"nonce", hex.EncodeToString(nonce)}}, extra...)
	ev := s.event(nostr.KindHTTPAuth, now(), "", tags...)
	return nip98.Scheme + " " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil))
}

// post sends body to path on the pod with Host host and the given
// Authorization header ("" for none).
func (p *pod) post(t testing.TB, host, path, auth string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
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

// api posts body to path on host, signed by s for that host.
func (p *pod) api(t testing.TB, s *signer, host, path string, body []byte) (int, []byte) {
	t.Helper()
	return p.post(t, host, path, nip98Token(t, s, "http://"+host+path, body), body)
}

func (p *pod) apiJSON(t testing.TB, s *signer, host, path string, v any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return p.api(t, s, host, path, b)
}

func (p *pod) publishHTTP(t testing.TB, s *signer, host string, ev *nostr.Event) eventResult {
	t.Helper()
	code, b := p.api(t, s, host, EventsPath, ev.AppendJSON(nil))
	var res eventResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("/events answered %d %s", code, b)
	}
	if res.Accepted != (code == http.StatusOK) && !strings.HasPrefix(res.Message, "duplicate:") {
		t.Fatalf("/events status %d for %+v", code, res)
	}
	return res
}

func (p *pod) queryHTTP(t testing.TB, s *signer, host, path string, filters ...nostr.Filter) []*nostr.Event {
	t.Helper()
	code, b := p.apiJSON(t, s, host, path, filters)
	if code != http.StatusOK {
		t.Fatalf("/query: %d %s", code, b)
	}
	var evs []*nostr.Event
	if err := json.Unmarshal(b, &evs); err != nil {
		t.Fatalf("/query body %s: %v", b, err)
	}
	return evs
}

func (p *pod) countHTTP(t testing.TB, s *signer, host string, filters ...nostr.Filter) int64 {
	t.Helper()
	code, b := p.apiJSON(t, s, host, CountPath, filters)
	var res struct{ Count int64 }
	if code != http.StatusOK || json.Unmarshal(b, &res) != nil {
		t.Fatalf("/count: %d %s", code, b)
	}
	return res.Count
}

func startAPIPod(t testing.TB, st store.Backend, host string) *pod {
	t.Helper()
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	return startPod(t, st, host, WithHTTPAPI(v), WithRelayKey(testMaster))
}

func TestHTTPAPI(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		const hostA, hostB = "a.example", "b.example"
		st := b.open(t)
		p := startAPIPod(t, st, hostA)
		if _, _, err := st.EnsureCommunity(context.Background(), hostB); err != nil {
			t.Fatal(err)
		}
		alice, bob := newSigner(t), newSigner(t)

		// /events: the ingest pipeline's OK, as JSON.
		note := alice.event(1, now(), "hello over http")
		res := p.publishHTTP(t, alice, hostA, note)
		eq(t, "accepted", res, eventResult{EventID: note.ID, Accepted: true})
		res = p.publishHTTP(t, alice, hostA, note)
		eq(t, "duplicate", res.Message, ingest.MsgDuplicate)
		bad := alice.event(nostr.KindProject, now(), "", nostr.Tag{"d", "x"}, nostr.Tag{"d", "y"})
		code, body := p.api(t, alice, hostA, EventsPath, bad.AppendJSON(nil))
		eq(t, "invalid status", code, http.StatusBadRequest)
		mustPrefix(t, "invalid body", string(body), `{"event_id":"`+bad.ID+`","accepted":false,"message":"invalid: project d-cardinality: `)
		code, _ = p.api(t, alice, hostA, EventsPath, []byte(`{"kind":1}`))
		eq(t, "unparsable event", code, http.StatusBadRequest)

		// The WebSocket sees what HTTP stored, and the reverse.
		c := p.dial(t)
		eq(t, "ws sees http event", strings.Join(ids(c.req("s", nostr.Filter{IDs: []string{note.ID}})), ","), note.ID)
		wsNote := bob.event(1, now(), "hello over ws")
		c.mustAccept(wsNote)

		eq(t, "NIP-11 lists NIP-98", slices.Contains(p.relay.NIP11Document().SupportedNIPs, 98), true)

		// /query with one filter and with a list; /count.
		code, body = p.apiJSON(t, bob, hostA, QueryPath, nostr.Filter{IDs: []string{wsNote.ID}})
		eq(t, "single filter status", code, http.StatusOK)
		var one []*nostr.Event
		_ = json.Unmarshal(body, &one)
		eq(t, "single filter", len(one), 1)
		got := p.queryHTTP(t, bob, hostA, QueryPath, nostr.Filter{Authors: []string{alice.pub()}}, nostr.Filter{Authors: []string{bob.pub()}})
		eq(t, "two filters", len(got), 2)
		eq(t, "count", p.countHTTP(t, bob, hostA, nostr.Filter{Kinds: []int{1}}), int64(2))

		// Community B sees nothing of A: a foreign id answers like a
		// random one, on every route.
		random := strings.Repeat("ab", 32)
		for _, id := range []string{note.ID, random} {
			code, body := p.apiJSON(t, bob, hostB, QueryPath, nostr.Filter{IDs: []string{id}})
			eq(t, "foreign id query", code, http.StatusOK)
			eq(t, "foreign id query body", string(body), "[]")
			eq(t, "foreign id count", p.countHTTP(t, bob, hostB, nostr.Filter{IDs: []string{id}}), int64(0))
		}
		eq(t, "B count", p.countHTTP(t, bob, hostB, nostr.Filter{Kinds: []int{1}}), int64(0))
		// The same event posted to B is B's own, independent copy.
		eq(t, "same event in B", p.publishHTTP(t, alice, hostB, note).Accepted, true)
		eq(t, "A unchanged", p.countHTTP(t, bob, hostA, nostr.Filter{Kinds: []int{1}}), int64(2))

		// Unmapped host: the fixed 404, whatever the token.
		code, body = p.api(t, alice, "nowhere.example", QueryPath, []byte(`{}`))
		eq(t, "unmapped status", code, http.StatusNotFound)
		eq(t, "unmapped body", string(body), tenant.ErrUnmappedHost.Error()+"\n")
	})
}

func TestHTTPAPIAuthentication(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		const hostA, hostB = "a.example", "b.example"
		st := b.open(t)
		p := startAPIPod(t, st, hostA)
		if _, _, err := st.EnsureCommunity(context.Background(), hostB); err != nil {
			t.Fatal(err)
		}
		s := newSigner(t)
		body := []byte(`{"kinds":[1]}`)
		urlA := "http://" + hostA + QueryPath

		code, first := p.post(t, hostA, QueryPath, "", body)
		eq(t, "no token", code, http.StatusUnauthorized)
		eq(t, "no token body", string(first), `{"error":"unauthorized","message":"NIP-98: missing Authorization header"}`)

		// A token used twice in one community is a replay.
		tok := nip98Token(t, s, urlA, body)
		code, _ = p.post(t, hostA, QueryPath, tok, body)
		eq(t, "first use", code, http.StatusOK)
		code, replay := p.post(t, hostA, QueryPath, tok, body)
		eq(t, "replay", code, http.StatusUnauthorized)
		eq(t, "replay body", string(replay), `{"error":"unauthorized","message":"NIP-98: replay detected"}`)

		// A token minted for B's URL, used on A, answers exactly like a
		// bad signature.
		code, foreign := p.post(t, hostA, QueryPath, nip98Token(t, s, "http://"+hostB+QueryPath, body), body)
		eq(t, "foreign token", code, http.StatusUnauthorized)
		ev := s.event(nostr.KindHTTPAuth, now(), "", nostr.Tag{"u", urlA}, nostr.Tag{"method", "POST"})
		ev.Sig = strings.Repeat("0", 128)
		code, badSig := p.post(t, hostA, QueryPath, nip98.Scheme+" "+base64.StdEncoding.EncodeToString(ev.AppendJSON(nil)), body)
		eq(t, "bad signature", code, http.StatusUnauthorized)
		eq(t, "foreign token answers like a bad signature", string(foreign), string(badSig))

		// The payload tag binds the body.
		code, _ = p.post(t, hostA, QueryPath, nip98Token(t, s, urlA, []byte(`{"kinds":[0]}`)), body)
		eq(t, "payload mismatch", code, http.StatusUnauthorized)

		// Bodies are limited to 1 MiB.
		big := append([]byte(`{"kinds":[1],"#t":["`), bytes.Repeat([]byte("x"), MaxHTTPBodyBytes)...)
		big = append(big, `"]}`...)
		code, _ = p.post(t, hostA, QueryPath, nip98Token(t, s, urlA, big), big)
		eq(t, "body too large", code, http.StatusRequestEntityTooLarge)

		// Bad input: a NIP-01 prefixed refusal.
		for _, raw := range []string{`"x"`, `[]`, `{"kinds":"x"}`} {
			code, body := p.api(t, s, hostA, QueryPath, []byte(raw))
			eq(t, "bad filters "+raw, code, http.StatusBadRequest)
			mustPrefix(t, "bad filters body "+raw, string(body), `{"error":"invalid","message":"invalid: `)
		}
	})
}

// TestHTTPAPIPagination pages through events sharing created_at with
// until and before_id: every event exactly once, in the order of one big
// query.
func TestHTTPAPIPagination(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		const host = "a.example"
		p := startAPIPod(t, b.open(t), host)
		s := newSigner(t)
		t0 := now() - 50
		c := p.dial(t)
		for i := range 9 {
			at := t0
			if i >= 6 {
				at = t0 - int64(i) // three older, distinct seconds
			}
			c.mustAccept(s.event(1, at, "page "+strconv.Itoa(i)))
		}
		c.mustAccept(s.event(1, t0+10, "after the window")) // excluded by the filter's until
		until := t0
		f := nostr.Filter{Authors: []string{s.pub()}, Until: &until}
		all := ids(p.queryHTTP(t, s, host, QueryPath, f))
		eq(t, "all", len(all), 9)

		f.Limit, f.LimitSet = 2, true
		var paged []string
		path := QueryPath
		for range 10 {
			page := p.queryHTTP(t, s, host, path, f)
			if len(page) == 0 {
				break
			}
			paged = append(paged, ids(page)...)
			last := page[len(page)-1]
			path = QueryPath + "?until=" + strconv.FormatInt(last.CreatedAt, 10) + "&before_id=" + last.ID
		}
		eq(t, "pages", strings.Join(paged, ","), strings.Join(all, ","))

		code, _ := p.api(t, s, host, QueryPath+"?before_id="+all[0], []byte(`{}`))
		eq(t, "before_id without until", code, http.StatusBadRequest)
	})
}

// TestHTTPAPIChannels: the HTTP reads apply REQ's channel rules with the
// NIP-98 signer as the reader.
func TestHTTPAPIChannels(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		const host = "a.example"
		p := startAPIPod(t, b.open(t), host)
		owner, stranger := newSigner(t), newSigner(t)
		id := storetest.NewChannelID()
		create := owner.event(nostr.KindCreateChannel, now(), "", chanTag(id), nostr.Tag{"name", "secret"}, nostr.Tag{"visibility", "private"})
		eq(t, "create over http", p.publishHTTP(t, owner, host, create).Accepted, true)
		msg := owner.event(nostr.KindChatMessage, now(), "psst", chanTag(id))
		eq(t, "post over http", p.publishHTTP(t, owner, host, msg).Accepted, true)
		res := p.publishHTTP(t, stranger, host, stranger.event(nostr.KindChatMessage, now(), "let me in", chanTag(id)))
		eq(t, "stranger post", res.Accepted, false)

		msgs := hFilter(id)
		msgs.Kinds = []int{nostr.KindChatMessage}
		eq(t, "member reads", len(p.queryHTTP(t, owner, host, QueryPath, msgs)), 1)
		code, body := p.apiJSON(t, stranger, host, QueryPath, hFilter(id))
		eq(t, "stranger #h status", code, http.StatusForbidden)
		eq(t, "stranger #h body", string(body), `{"error":"restricted","message":"`+channel.MsgChannelDenied+`"}`)
		code, _ = p.apiJSON(t, stranger, host, CountPath, hFilter(id))
		eq(t, "stranger #h count", code, http.StatusForbidden)
		// Without #h the private channel is simply out of scope.
		kinds := nostr.Filter{Kinds: []int{nostr.KindChatMessage}}
		eq(t, "stranger without #h", len(p.queryHTTP(t, stranger, host, QueryPath, kinds)), 0)
		eq(t, "stranger count without #h", p.countHTTP(t, stranger, host, kinds), int64(0))
		eq(t, "member count without #h", p.countHTTP(t, owner, host, kinds), int64(1))
		// A random channel id answers like the private one.
		code, body2 := p.apiJSON(t, stranger, host, QueryPath, hFilter(storetest.NewChannelID()))
		eq(t, "random channel", code, http.StatusForbidden)
		eq(t, "random channel body", string(body2), string(body))
		// On another community's host the channel does not exist either:
		// its owner gets the answer of a random id.
		if _, _, err := p.st.EnsureCommunity(context.Background(), "b.example"); err != nil {
			t.Fatal(err)
		}
		code, body3 := p.apiJSON(t, owner, "b.example", QueryPath, hFilter(id))
		eq(t, "channel of A named on B", code, http.StatusForbidden)
		eq(t, "channel of A named on B body", string(body3), string(body))
	})
}

// TestHTTPAPIReplayAcrossPods: two relays on one PostgreSQL database, each
// with its own verifier over one Redis replay guard — a token accepted by
// one pod is a replay on the other.
func TestHTTPAPIReplayAcrossPods(t *testing.T) {
	addr := testenv.NeedRedis(t)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	ns := "buzztest" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() {
		ctx := context.Background()
		if keys, err := client.Do(ctx, client.B().Keys().Pattern(ns+":*").Build()).AsStrSlice(); err == nil && len(keys) > 0 {
			client.Do(ctx, client.B().Del().Key(keys...).Build())
		}
	})
	pod := func(st store.Backend) *pod {
		g, err := redisreplay.New(client, redisreplay.WithNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		v, err := nip98.NewVerifier(nip98.WithReplayGuard(g))
		if err != nil {
			t.Fatal(err)
		}
		return startPod(t, st, "a.example", WithHTTPAPI(v))
	}
	forEachBackend(t, func(t *testing.T, b testBackend) {
		if !b.shared {
			t.Skip("one process per embedded store")
		}
		p1, p2 := pod(b.open(t)), pod(b.open(t))
		s := newSigner(t)
		body := []byte(`{"kinds":[1]}`)
		tok := nip98Token(t, s, "http://a.example"+CountPath, body)
		code, _ := p1.post(t, "a.example", CountPath, tok, body)
		eq(t, "first use on pod 1", code, http.StatusOK)
		code, res := p2.post(t, "a.example", CountPath, tok, body)
		eq(t, "replay on pod 2", code, http.StatusUnauthorized)
		eq(t, "replay body", string(res), `{"error":"unauthorized","message":"NIP-98: replay detected"}`)
	})
}

// TestHTTPAPISchemeFromRelayURL: with a wss relay URL, a NIP-98 u tag must
// name https on the community's host; http is refused like a bad signature.
func TestHTTPAPISchemeFromRelayURL(t *testing.T) {
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	st := openEmbedded(t, t.TempDir())
	p := startPod(t, st, "a.example", WithHTTPAPI(v), WithRelayURL("wss://relay.example"))
	s := newSigner(t)
	body := []byte(`{"kinds":[1]}`)
	code, _ := p.post(t, "a.example", CountPath, nip98Token(t, s, "https://a.example"+CountPath, body), body)
	eq(t, "https token", code, http.StatusOK)
	code, res := p.post(t, "a.example", CountPath, nip98Token(t, s, "http://a.example"+CountPath, body), body)
	eq(t, "http token", code, http.StatusUnauthorized)
	eq(t, "http token body", string(res), `{"error":"unauthorized","message":"NIP-98: invalid signature"}`)
}

// TestHTTPAPITraced runs HTTP writes and reads, in two communities, under
// the isolation tracer: every trace passes the independent checker.
func TestHTTPAPITraced(t *testing.T) {
	rec := trace.NewRecorder()
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	st := openEmbedded(t, t.TempDir())
	p := startPod(t, st, "a.example", WithHTTPAPI(v), WithTracer(rec.Open), WithRelayKey(testMaster))
	if _, _, err := st.EnsureCommunity(context.Background(), "b.example"); err != nil {
		t.Fatal(err)
	}
	alice, mallory := newSigner(t), newSigner(t)
	id := storetest.NewChannelID()
	eq(t, "create", p.publishHTTP(t, alice, "a.example", alice.event(nostr.KindCreateChannel, now(), "", chanTag(id), nostr.Tag{"name", "p"}, nostr.Tag{"visibility", "private"})).Accepted, true)
	msg := alice.event(nostr.KindChatMessage, now(), "secret", chanTag(id))
	eq(t, "message", p.publishHTTP(t, alice, "a.example", msg).Accepted, true)
	note := alice.event(1, now(), "note")
	eq(t, "note", p.publishHTTP(t, alice, "a.example", note).Accepted, true)
	eq(t, "duplicate", p.publishHTTP(t, alice, "a.example", note).Message, ingest.MsgDuplicate)

	p.queryHTTP(t, alice, "a.example", QueryPath, hFilter(id))
	p.queryHTTP(t, alice, "a.example", QueryPath, nostr.Filter{IDs: []string{note.ID, msg.ID}}, nostr.Filter{Kinds: []int{1, 9}})
	p.countHTTP(t, alice, "a.example", nostr.Filter{Kinds: []int{1}})
	code, _ := p.apiJSON(t, mallory, "a.example", QueryPath, hFilter(id))
	eq(t, "mallory #h", code, http.StatusForbidden)
	p.queryHTTP(t, mallory, "b.example", QueryPath, nostr.Filter{IDs: []string{note.ID, msg.ID}})
	code, _ = p.apiJSON(t, mallory, "b.example", CountPath, hFilter(id))
	eq(t, "mallory #h on b", code, http.StatusForbidden)
	eq(t, "foreign channel event into b", p.publishHTTP(t, mallory, "b.example", msg).Accepted, false)
	eq(t, "note into b", p.publishHTTP(t, mallory, "b.example", note).Accepted, true)
	seen := checkTraces(t, rec, false)
	for _, a := range []string{"write_insert", "read_message_rows", "read_by_id_rows", "auth_check"} {
		if !seen[a] {
			t.Errorf("HTTP traffic never traced %s (saw %v)", a, seen)
		}
	}
}
