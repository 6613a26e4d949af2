package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/httpapi"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/internal/tracetest"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nip98/redisreplay"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

const (
	queryPath = httpapi.QueryPath
	countPath = httpapi.CountPath
)

// relayKey signs the relay's own events (channel state).
var relayKey = func() nostr.SecretKey {
	sk, err := nostr.ParseSecretKey(strings.Repeat("3c", 32))
	if err != nil {
		panic(err)
	}
	return sk
}()

// serve runs a relay on st with the HTTP API (relaytest.Serve) and the
// relay key.
func serve(t testing.TB, st relaytest.Backend, opts ...buzz.Option) api {
	t.Helper()
	return api{relaytest.Serve(t, st, append([]buzz.Option{buzz.WithRelayKey(relayKey)}, opts...)...)}
}

func TestHTTPAPI(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		p := serve(t, st)
		hostA, hostB := p.Host, "b.example"
		p.community(t, st, hostB)
		alice, bob := newSigner(t), newSigner(t)

		// /events: the ingest pipeline's OK, as JSON.
		note := alice.event(t, 1, now(), "hello over http")
		res := p.publish(t, alice, hostA, note)
		eq(t, "accepted", res, httpapi.EventResult{EventID: note.ID, Accepted: true})
		res = p.publish(t, alice, hostA, note)
		eq(t, "duplicate", res.Message, ingest.MsgDuplicate)
		bad := alice.event(t, nostr.KindProject, now(), "", nostr.Tag{"d", "x"}, nostr.Tag{"d", "y"})
		code, body := p.call(t, alice, hostA, httpapi.EventsPath, bad.AppendJSON(nil))
		eq(t, "invalid status", code, http.StatusBadRequest)
		mustPrefix(t, "invalid body", string(body), `{"event_id":"`+bad.ID+`","accepted":false,"message":"invalid: project d-cardinality: `)
		code, _ = p.call(t, alice, hostA, httpapi.EventsPath, []byte(`{"kind":1}`))
		eq(t, "unparsable event", code, http.StatusBadRequest)
		// Presence belongs to a connection.
		res = p.publish(t, alice, hostA, alice.event(t, nostr.KindPresence, now(), "online"))
		eq(t, "presence over HTTP", res.Message, "invalid: presence is only accepted via WebSocket")

		// The WebSocket sees what HTTP stored, and the reverse.
		c := p.dial(t)
		eq(t, "ws sees http event", strings.Join(ids(c.req("s", nostr.Filter{IDs: []string{note.ID}})), ","), note.ID)
		wsNote := bob.event(t, 1, now(), "hello over ws")
		c.mustAccept(wsNote)

		eq(t, "NIP-11 lists NIP-98", slices.Contains(p.Relay.Relay.NIP11Document().SupportedNIPs, 98), true)

		// /query with one filter and with a list; /count.
		code, body = p.callJSON(t, bob, hostA, queryPath, nostr.Filter{IDs: []string{wsNote.ID}})
		eq(t, "single filter status", code, http.StatusOK)
		var one []*nostr.Event
		_ = json.Unmarshal(body, &one)
		eq(t, "single filter", len(one), 1)
		got := p.query(t, bob, hostA, queryPath, nostr.Filter{Authors: []string{alice.pub()}}, nostr.Filter{Authors: []string{bob.pub()}})
		eq(t, "two filters", len(got), 2)
		eq(t, "count", p.count(t, bob, hostA, nostr.Filter{Kinds: []int{1}}), int64(2))

		// Community B sees nothing of A: a foreign id answers like a
		// random one, on every route.
		random := strings.Repeat("ab", 32)
		for _, id := range []string{note.ID, random} {
			code, body := p.callJSON(t, bob, hostB, queryPath, nostr.Filter{IDs: []string{id}})
			eq(t, "foreign id query", code, http.StatusOK)
			eq(t, "foreign id query body", string(body), "[]")
			eq(t, "foreign id count", p.count(t, bob, hostB, nostr.Filter{IDs: []string{id}}), int64(0))
		}
		eq(t, "B count", p.count(t, bob, hostB, nostr.Filter{Kinds: []int{1}}), int64(0))
		// The same event posted to B is B's own, independent copy.
		eq(t, "same event in B", p.publish(t, alice, hostB, note).Accepted, true)
		eq(t, "A unchanged", p.count(t, bob, hostA, nostr.Filter{Kinds: []int{1}}), int64(2))

		// Unmapped host: the fixed 404, whatever the token.
		code, body = p.call(t, alice, "nowhere.example", queryPath, []byte(`{}`))
		eq(t, "unmapped status", code, http.StatusNotFound)
		eq(t, "unmapped body", string(body), tenant.ErrUnmappedHost.Error()+"\n")
	})
}

func TestHTTPAPIAuthentication(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		p := serve(t, st)
		hostA, hostB := p.Host, "b.example"
		p.community(t, st, hostB)
		s := newSigner(t)
		body := []byte(`{"kinds":[1]}`)
		urlA := "http://" + hostA + queryPath
		token := func(url string, body []byte) string { return s.u.NIP98(t, http.MethodPost, url, body) }

		code, first := p.post(t, hostA, queryPath, "", body)
		eq(t, "no token", code, http.StatusUnauthorized)
		eq(t, "no token body", string(first), `{"error":"unauthorized","message":"NIP-98: missing Authorization header"}`)

		// A token used twice in one community is a replay.
		tok := token(urlA, body)
		code, _ = p.post(t, hostA, queryPath, tok, body)
		eq(t, "first use", code, http.StatusOK)
		code, replay := p.post(t, hostA, queryPath, tok, body)
		eq(t, "replay", code, http.StatusUnauthorized)
		eq(t, "replay body", string(replay), `{"error":"unauthorized","message":"NIP-98: replay detected"}`)

		// A token minted for B's URL, used on A, answers exactly like a
		// bad signature.
		code, foreign := p.post(t, hostA, queryPath, token("http://"+hostB+queryPath, body), body)
		eq(t, "foreign token", code, http.StatusUnauthorized)
		ev := s.event(t, nostr.KindHTTPAuth, now(), "", nostr.Tag{"u", urlA}, nostr.Tag{"method", "POST"})
		ev.Sig = strings.Repeat("0", 128)
		code, badSig := p.post(t, hostA, queryPath, nip98.Scheme+" "+base64.StdEncoding.EncodeToString(ev.AppendJSON(nil)), body)
		eq(t, "bad signature", code, http.StatusUnauthorized)
		eq(t, "foreign token answers like a bad signature", string(foreign), string(badSig))

		// The payload tag binds the body.
		code, _ = p.post(t, hostA, queryPath, token(urlA, []byte(`{"kinds":[0]}`)), body)
		eq(t, "payload mismatch", code, http.StatusUnauthorized)

		// Bodies are limited to 1 MiB.
		big := append([]byte(`{"kinds":[1],"#t":["`), bytes.Repeat([]byte("x"), httpapi.MaxBodyBytes)...)
		big = append(big, `"]}`...)
		code, _ = p.post(t, hostA, queryPath, token(urlA, big), big)
		eq(t, "body too large", code, http.StatusRequestEntityTooLarge)

		// Bad input: a NIP-01 prefixed refusal.
		for _, raw := range []string{`"x"`, `[]`, `{"kinds":"x"}`} {
			code, body := p.call(t, s, hostA, queryPath, []byte(raw))
			eq(t, "bad filters "+raw, code, http.StatusBadRequest)
			mustPrefix(t, "bad filters body "+raw, string(body), `{"error":"invalid","message":"invalid: `)
		}
	})
}

// TestHTTPAPIPagination pages through events sharing created_at with
// until and before_id: every event exactly once, in the order of one big
// query.
func TestHTTPAPIPagination(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		p := serve(t, st)
		host := p.Host
		s := newSigner(t)
		t0 := now() - 50
		c := p.dial(t)
		for i := range 9 {
			at := t0
			if i >= 6 {
				at = t0 - int64(i) // three older, distinct seconds
			}
			c.mustAccept(s.event(t, 1, at, "page "+strconv.Itoa(i)))
		}
		c.mustAccept(s.event(t, 1, t0+10, "after the window")) // excluded by the filter's until
		until := t0
		f := nostr.Filter{Authors: []string{s.pub()}, Until: &until}
		all := ids(p.query(t, s, host, queryPath, f))
		eq(t, "all", len(all), 9)

		f.Limit, f.LimitSet = 2, true
		var paged []string
		path := queryPath
		for range 10 {
			page := p.query(t, s, host, path, f)
			if len(page) == 0 {
				break
			}
			paged = append(paged, ids(page)...)
			last := page[len(page)-1]
			path = queryPath + "?until=" + strconv.FormatInt(last.CreatedAt, 10) + "&before_id=" + last.ID
		}
		eq(t, "pages", strings.Join(paged, ","), strings.Join(all, ","))

		code, body := p.call(t, s, host, queryPath+"?before_id="+all[0], []byte(`{}`))
		eq(t, "before_id without until", code, http.StatusBadRequest)
		mustPrefix(t, "before_id without until body", string(body), `{"error":"invalid","message":"invalid: until and before_id`)
		// An unauthenticated request with a bad cursor learns nothing.
		code, _ = p.post(t, host, queryPath+"?until=x", "", []byte(`{}`))
		eq(t, "bad cursor without a token", code, http.StatusUnauthorized)
	})
}

// TestHTTPAPIChannels: the HTTP reads apply REQ's channel rules with the
// NIP-98 signer as the reader.
func TestHTTPAPIChannels(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		p := serve(t, st)
		host := p.Host
		owner, stranger := newSigner(t), newSigner(t)
		id := storetest.NewChannelID()
		create := owner.event(t, nostr.KindCreateChannel, now(), "", chanTag(id), nostr.Tag{"name", "secret"}, nostr.Tag{"visibility", "private"})
		eq(t, "create over http", p.publish(t, owner, host, create).Accepted, true)
		msg := owner.event(t, nostr.KindChatMessage, now(), "psst", chanTag(id))
		eq(t, "post over http", p.publish(t, owner, host, msg).Accepted, true)
		res := p.publish(t, stranger, host, stranger.event(t, nostr.KindChatMessage, now(), "let me in", chanTag(id)))
		eq(t, "stranger post", res.Accepted, false)

		msgs := hFilter(id)
		msgs.Kinds = []int{nostr.KindChatMessage}
		eq(t, "member reads", len(p.query(t, owner, host, queryPath, msgs)), 1)
		code, body := p.callJSON(t, stranger, host, queryPath, hFilter(id))
		eq(t, "stranger #h status", code, http.StatusForbidden)
		eq(t, "stranger #h body", string(body), `{"error":"restricted","message":"`+channel.MsgChannelDenied+`"}`)
		code, _ = p.callJSON(t, stranger, host, countPath, hFilter(id))
		eq(t, "stranger #h count", code, http.StatusForbidden)
		// Without #h the private channel is simply out of scope.
		kinds := nostr.Filter{Kinds: []int{nostr.KindChatMessage}}
		eq(t, "stranger without #h", len(p.query(t, stranger, host, queryPath, kinds)), 0)
		eq(t, "stranger count without #h", p.count(t, stranger, host, kinds), int64(0))
		eq(t, "member count without #h", p.count(t, owner, host, kinds), int64(1))
		// A random channel id answers like the private one.
		code, body2 := p.callJSON(t, stranger, host, queryPath, hFilter(storetest.NewChannelID()))
		eq(t, "random channel", code, http.StatusForbidden)
		eq(t, "random channel body", string(body2), string(body))
		// On another community's host the channel does not exist either:
		// its owner gets the answer of a random id.
		p.community(t, st, "b.example")
		code, body3 := p.callJSON(t, owner, "b.example", queryPath, hFilter(id))
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
	dsn := pgtest.NewDatabase(t)
	pod := func() api {
		st, err := postgres.Open(context.Background(), dsn, postgres.WithLogger(relaytest.Quiet()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		g, err := redisreplay.New(client, redisreplay.WithNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		v, err := nip98.NewVerifier(nip98.WithReplayGuard(g))
		if err != nil {
			t.Fatal(err)
		}
		p := api{relaytest.ServeWith(t, st, buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithHTTPAuth(v),
			buzz.WithFeature(httpapi.New()), buzz.WithLogger(relaytest.Quiet()))}
		p.community(t, st, "a.example")
		return p
	}
	p1, p2 := pod(), pod()
	s := newSigner(t)
	body := []byte(`{"kinds":[1]}`)
	tok := s.u.NIP98(t, http.MethodPost, "http://a.example"+countPath, body)
	code, _ := p1.post(t, "a.example", countPath, tok, body)
	eq(t, "first use on pod 1", code, http.StatusOK)
	code, res := p2.post(t, "a.example", countPath, tok, body)
	eq(t, "replay on pod 2", code, http.StatusUnauthorized)
	eq(t, "replay body", string(res), `{"error":"unauthorized","message":"NIP-98: replay detected"}`)
}

// TestHTTPAPISchemeFromRelayURL: with a wss relay URL, a NIP-98 u tag must
// name https on the community's host; http is refused like a bad signature.
func TestHTTPAPISchemeFromRelayURL(t *testing.T) {
	st := relaytest.Embedded(t)
	p := serve(t, st, buzz.WithRelayURL("wss://relay.example"))
	p.community(t, st, "a.example")
	s := newSigner(t)
	body := []byte(`{"kinds":[1]}`)
	code, _ := p.post(t, "a.example", countPath, s.u.NIP98(t, http.MethodPost, "https://a.example"+countPath, body), body)
	eq(t, "https token", code, http.StatusOK)
	code, res := p.post(t, "a.example", countPath, s.u.NIP98(t, http.MethodPost, "http://a.example"+countPath, body), body)
	eq(t, "http token", code, http.StatusUnauthorized)
	eq(t, "http token body", string(res), `{"error":"unauthorized","message":"NIP-98: invalid signature"}`)
}

// TestHTTPAPIWithoutAuth: the API needs a relay that authenticates HTTP
// requests.
func TestHTTPAPIWithoutAuth(t *testing.T) {
	st := relaytest.Embedded(t)
	_, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithFeature(httpapi.New()))
	if err == nil || !strings.HasPrefix(err.Error(), "httpapi: ") {
		t.Fatalf("without WithHTTPAuth: %v", err)
	}
}

// TestHTTPAPITraced runs HTTP writes and reads, in two communities, under
// the isolation tracer: every trace passes the independent checker.
func TestHTTPAPITraced(t *testing.T) {
	rec := trace.NewRecorder()
	st := relaytest.Embedded(t)
	p := serve(t, st, buzz.WithTracer(rec.Open))
	a, b := "a.example", "b.example"
	p.community(t, st, a)
	p.community(t, st, b)
	alice, mallory := newSigner(t), newSigner(t)
	id := storetest.NewChannelID()
	eq(t, "create", p.publish(t, alice, a, alice.event(t, nostr.KindCreateChannel, now(), "", chanTag(id), nostr.Tag{"name", "p"}, nostr.Tag{"visibility", "private"})).Accepted, true)
	msg := alice.event(t, nostr.KindChatMessage, now(), "secret", chanTag(id))
	eq(t, "message", p.publish(t, alice, a, msg).Accepted, true)
	note := alice.event(t, 1, now(), "note")
	eq(t, "note", p.publish(t, alice, a, note).Accepted, true)
	eq(t, "duplicate", p.publish(t, alice, a, note).Message, ingest.MsgDuplicate)

	p.query(t, alice, a, queryPath, hFilter(id))
	p.query(t, alice, a, queryPath, nostr.Filter{IDs: []string{note.ID, msg.ID}}, nostr.Filter{Kinds: []int{1, 9}})
	p.count(t, alice, a, nostr.Filter{Kinds: []int{1}})
	code, _ := p.callJSON(t, mallory, a, queryPath, hFilter(id))
	eq(t, "mallory #h", code, http.StatusForbidden)
	code, _ = p.call(t, mallory, a, queryPath, []byte(`{"kinds":"x"}`))
	eq(t, "mallory's bad filter", code, http.StatusBadRequest)
	p.query(t, mallory, b, queryPath, nostr.Filter{IDs: []string{note.ID, msg.ID}})
	code, _ = p.callJSON(t, mallory, b, countPath, hFilter(id))
	eq(t, "mallory #h on b", code, http.StatusForbidden)
	eq(t, "foreign channel event into b", p.publish(t, mallory, b, msg).Accepted, false)
	eq(t, "note into b", p.publish(t, mallory, b, note).Accepted, true)

	seen := tracetest.CheckTraces(t, rec, false)
	for _, a := range []string{"write_insert", "read_message_rows", "read_by_id_rows", "auth_check", "sanitized_error"} {
		if !seen[a] {
			t.Errorf("HTTP traffic never traced %s (saw %v)", a, seen)
		}
	}
}
