package buzz

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/fakeclock"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store"
)

// reminder is a NIP-ER reminder by s with address d, due at notBefore.
func reminder(s *signer, createdAt int64, d string, notBefore int64, content string, extra ...nostr.Tag) *nostr.Event {
	tags := []nostr.Tag{{"d", d}}
	if notBefore >= 0 {
		tags = append(tags, nostr.Tag{"not_before", strconv.FormatInt(notBefore, 10)})
	}
	tags = append(tags, nostr.Tag{"alt", "Encrypted reminder"})
	return s.Event(nostr.KindReminder, createdAt, content, append(tags, extra...)...)
}

// httpRead posts a filter to path (/query or /count) on tr for host,
// signed by s (NIP-98), and returns the status and body.
func httpRead(t *testing.T, tr *testRelay, s *signer, host, path string, f nostr.Filter) (int, []byte) {
	t.Helper()
	body, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, tr.srv.URL+path, bytes.NewReader(body))
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
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

// TestReminderAdmission: Buzz's rules for a kind 30300's public tags, each
// refusal in Buzz's words; a future not_before within the horizon, and a
// terminal reminder without one, are accepted.
func TestReminderAdmission(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		tr := backendRelay(t, st)
		alice := newSigner(t)
		c := tr.dial(t)
		c.AuthAs(alice, tr.host)
		at := now()
		for name, tc := range map[string]struct {
			tags []nostr.Tag
			want string
		}{
			"leading zero":     {[]nostr.Tag{{"d", "x"}, {"not_before", "0" + strconv.FormatInt(at+60, 10)}}, ingest.MsgMalformedNotBefore},
			"sign":             {[]nostr.Tag{{"d", "x"}, {"not_before", "+" + strconv.FormatInt(at+60, 10)}}, ingest.MsgMalformedNotBefore},
			"decimal":          {[]nostr.Tag{{"d", "x"}, {"not_before", "1.5"}}, ingest.MsgMalformedNotBefore},
			"empty":            {[]nostr.Tag{{"d", "x"}, {"not_before", ""}}, ingest.MsgMalformedNotBefore},
			"above 2^53-1":     {[]nostr.Tag{{"d", "x"}, {"not_before", "9007199254740992"}}, ingest.MsgMalformedNotBefore},
			"two not_before":   {[]nostr.Tag{{"d", "x"}, {"not_before", "5"}, {"not_before", "6"}}, ingest.MsgMalformedNotBefore},
			"no d":             {[]nostr.Tag{{"not_before", "5"}}, ingest.MsgReminderMissingD},
			"two d":            {[]nostr.Tag{{"d", "x"}, {"d", "y"}}, ingest.MsgReminderDuplicateD},
			"empty d":          {[]nostr.Tag{{"d", ""}}, ingest.MsgReminderEmptyD},
			"beyond a year":    {[]nostr.Tag{{"d", "x"}, {"not_before", strconv.FormatInt(at+2*365*86400, 10)}}, ingest.MsgNotBeforeTooFar},
			"expiration first": {[]nostr.Tag{{"d", "x"}, {"not_before", strconv.FormatInt(at+600, 10)}, {"expiration", strconv.FormatInt(at+600, 10)}}, ingest.MsgExpirationNotBefore},
		} {
			ok := c.Publish(alice.Event(nostr.KindReminder, at, "ciphertext", tc.tags...))
			if ok.OK || ok.Message != tc.want {
				t.Errorf("%s: OK %v %q, want refused %q", name, ok.OK, ok.Message, tc.want)
			}
		}
		c.MustAccept(reminder(alice, at, "due-soon", at+60, "ciphertext"))
		c.MustAccept(reminder(alice, at, "in-a-year", at+365*86400-60, "ciphertext"))
		c.MustAccept(reminder(alice, at, "zero", 0, "ciphertext"))
		c.MustAccept(reminder(alice, at, "done", -1, "ciphertext", nostr.Tag{"expiration", strconv.FormatInt(at+86400, 10)}))
	})
}

// TestRemindersAreAuthorOnly: no reader but the authenticated author learns
// of a reminder — not another member, not an anonymous reader, not the
// author in another community — by REQ (kinds, ids, authors, tags, no
// kinds, search), COUNT, the HTTP API or live delivery; the author reads,
// counts and receives them, and is told once, across two pods sharing
// the store and broker, when each falls due. A replaced reminder is not
// signalled.
func TestRemindersAreAuthorOnly(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		clk := fakeclock.New(time.Now())
		br, err := pubsub.NewLocal()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = br.Close() })
		v, err := nip98.NewVerifier()
		if err != nil {
			t.Fatal(err)
		}
		// The sweepers are driven by hand (DeliverDueReminders).
		opts := []Option{WithClock(clk.Now), WithBroker(br), withHTTPAPI(v), WithLimits(Limits{ReminderSweepInterval: time.Hour})}
		p1 := leakedRelay(t, st, opts...)
		p2 := leakedRelay(t, st, opts...)
		hostB := "other.example"
		if _, _, err := st.EnsureCommunity(context.Background(), hostB); err != nil {
			t.Fatal(err)
		}
		alice, bob := newSigner(t), newSigner(t)
		at := now()

		a := p1.dial(t)
		a.AuthAs(alice, p1.host)
		r1 := reminder(alice, at, "d-one", at+60, "zebra ciphertext one")
		a.MustAccept(r1)
		note := alice.Event(1, at, "zebra note")
		a.MustAccept(note)
		// Replaced before it falls due: never signalled.
		r3 := reminder(alice, at-1, "d-three", at+45, "zebra ciphertext three")
		a.MustAccept(r3)
		r3done := reminder(alice, at, "d-three", -1, "zebra ciphertext three, done")
		a.MustAccept(r3done)

		byKind := nostr.Filter{Kinds: []int{nostr.KindReminder}}
		own := nostr.Filter{Kinds: []int{nostr.KindReminder}, Authors: []string{alice.Pub()}}
		probes := map[string]nostr.Filter{
			"ids":      {IDs: []string{r1.ID}},
			"authors":  {Authors: []string{alice.Pub()}},
			"mixed":    {Kinds: []int{1, nostr.KindReminder}},
			"#d":       {Tags: map[string][]string{"d": {"d-one"}}},
			"no kinds": {},
			"search":   {Search: "zebra"},
		}

		// Another member, authenticated: single-kind reads are refused as
		// Buzz refuses them; every other read lacks the reminders.
		b := p1.dial(t)
		b.AuthAs(bob, p1.host)
		for _, f := range []nostr.Filter{byKind, own} {
			b.SendRaw(nostr.AppendReq(nil, "k", f))
			eq(t, "bob's REQ of reminders", b.ExpectClosed("k", "restricted:"), "restricted: author-only kinds require authors=[self]")
			eq(t, "bob's COUNT of reminders", countOf(t, b, "kc", f), int64(-1))
		}
		for name, f := range probes {
			for _, ev := range b.Req("p", f) {
				if ev.Kind == nostr.KindReminder {
					t.Fatalf("bob's %s read returned a reminder", name)
				}
			}
		}
		eq(t, "bob COUNT of alice's events", countOf(t, b, "c1", probes["authors"]), int64(1))
		eq(t, "bob COUNT by id", countOf(t, b, "c2", probes["ids"]), int64(0))
		eq(t, "bob COUNT of #d", countOf(t, b, "c3", probes["#d"]), int64(0))
		eq(t, "bob COUNT of everything", countOf(t, b, "c4", probes["no kinds"]), int64(1))
		eq(t, "bob COUNT of the search", countOf(t, b, "c5", probes["search"]), int64(1))

		// The same through go-nostr, an independent client.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rl, err := gonostr.RelayConnect(ctx, p1.url)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rl.QuerySync(ctx, gonostr.Filter{Kinds: []int{0}, Limit: 1}); err != nil {
			t.Fatal(err) // a round trip before AUTH (see nip29_interop_test.go)
		}
		if err := rl.Auth(ctx, func(e *gonostr.Event) error { return e.Sign(bob.SK.Hex()) }); err != nil {
			t.Fatalf("go-nostr AUTH: %v", err)
		}
		got, err := rl.QuerySync(ctx, gonostr.Filter{IDs: []string{r1.ID}})
		if err != nil || len(got) != 0 {
			t.Fatalf("go-nostr bob by id = %v, %v", got, err)
		}
		got, err = rl.QuerySync(ctx, gonostr.Filter{Authors: []string{alice.Pub()}})
		if err != nil || len(got) != 1 || got[0].ID != note.ID {
			t.Fatalf("go-nostr bob by author = %v, %v", got, err)
		}
		if n, _, err := rl.Count(ctx, gonostr.Filters{{Authors: []string{alice.Pub()}}}); err != nil || n != 1 {
			t.Fatalf("go-nostr bob COUNT = %d, %v", n, err)
		}

		// Anonymous: asking for reminders only needs AUTH.
		anon := p1.dial(t)
		anon.SendRaw(nostr.AppendReq(nil, "k", own))
		anon.ExpectClosed("k", "auth-required:")
		for name, f := range probes {
			for _, ev := range anon.Req("p", f) {
				if ev.Kind == nostr.KindReminder {
					t.Fatalf("anonymous %s read returned a reminder", name)
				}
			}
		}

		// The HTTP API: the same rules for the NIP-98 signer.
		if code, body := httpRead(t, p1, bob, p1.host, queryPath, own); code != http.StatusForbidden {
			t.Fatalf("bob /query of alice's reminders: %d %s", code, body)
		}
		for name, f := range probes {
			code, body := httpRead(t, p1, bob, p1.host, queryPath, f)
			if code != http.StatusOK || bytes.Contains(body, []byte(`"kind":30300`)) {
				t.Fatalf("bob /query %s: %d %s", name, code, body)
			}
		}
		if code, body := httpRead(t, p1, bob, p1.host, countPath, probes["authors"]); code != http.StatusOK || string(body) != `{"count":1}` {
			t.Fatalf("bob /count by author: %d %s", code, body)
		}
		if code, body := httpRead(t, p1, alice, p1.host, queryPath, own); code != http.StatusOK || !bytes.Contains(body, []byte(r1.ID)) {
			t.Fatalf("alice /query of her reminders: %d %s", code, body)
		}
		if code, body := httpRead(t, p1, alice, p1.host, countPath, own); code != http.StatusOK || string(body) != `{"count":2}` {
			t.Fatalf("alice /count of her reminders: %d %s", code, body)
		}

		// The author in another community: nothing there.
		ab := p1.dialHost(t, hostB)
		ab.AuthAs(alice, hostB)
		eq(t, "alice's reminders in another community", len(ab.Req("o", own)), 0)
		eq(t, "alice's COUNT in another community", countOf(t, ab, "oc", own), int64(0))
		if code, body := httpRead(t, p1, alice, hostB, queryPath, probes["ids"]); code != http.StatusOK || string(body) != `[]` {
			t.Fatalf("alice /query by id in another community: %d %s", code, body)
		}

		// The author reads and counts hers (the head of each address);
		// a search matches no reminder, hers included.
		if got := ids(a.Req("m", own)); len(got) != 2 || !slices.Contains(got, r1.ID) || !slices.Contains(got, r3done.ID) {
			t.Fatalf("alice's reminders = %v", got)
		}
		eq(t, "alice by id", len(a.Req("i", probes["ids"])), 1)
		eq(t, "alice COUNT", countOf(t, a, "ac", own), int64(2))
		eq(t, "alice COUNT of everything", countOf(t, a, "ae", nostr.Filter{}), int64(3))
		eq(t, "alice's search", len(a.Req("s", probes["search"])), 1)

		// Live: a new reminder reaches its author's subscription at once
		// (state sync), on the other pod too; nobody else's.
		a2 := p2.dialHost(t, p1.host)
		a2.AuthAs(alice, p1.host)
		mine := nostr.Filter{Kinds: []int{1}, Authors: []string{alice.Pub()}}
		a2.Subscribe("due", own, mine)
		b.Subscribe("live", nostr.Filter{}, nostr.Filter{Authors: []string{alice.Pub()}})
		ab.Subscribe("live", own, nostr.Filter{})
		r2 := reminder(alice, at, "d-two", at+30, "zebra ciphertext two")
		a.MustAccept(r2)
		eq(t, "alice's live reminder on the other pod", a2.NextLive("due").ID, r2.ID)
		marker := alice.Event(1, at, "marker one")
		a.MustAccept(marker)
		eq(t, "alice's next live event", a2.NextLive("due").ID, marker.ID)
		eq(t, "bob's first live event", b.NextLive("live").ID, marker.ID)

		// Due: both pods sweep at once; each due reminder is signalled
		// once, and the replaced one not at all.
		if n, err := p1.relay.DeliverDueReminders(ctx); err != nil || n != 0 {
			t.Fatalf("sweep before due = %d, %v", n, err)
		}
		clk.Advance(2 * time.Minute)
		var wg sync.WaitGroup
		var sent atomic.Int64
		for _, p := range []*testRelay{p1, p2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := p.relay.DeliverDueReminders(ctx)
				if err != nil {
					t.Errorf("DeliverDueReminders: %v", err)
				}
				sent.Add(int64(n))
			}()
		}
		wg.Wait()
		eq(t, "reminders signalled", sent.Load(), int64(2))
		// (Two pods may each have claimed one: in either order.)
		if due := []string{a2.NextLive("due").ID, a2.NextLive("due").ID}; !slices.Contains(due, r1.ID) || !slices.Contains(due, r2.ID) {
			t.Fatalf("due signals %v, want %s and %s", due, r1.ID, r2.ID)
		}
		for _, p := range []*testRelay{p1, p2} {
			if n, err := p.relay.DeliverDueReminders(ctx); err != nil || n != 0 {
				t.Fatalf("sweep after delivery = %d, %v", n, err)
			}
		}
		marker2 := alice.Event(1, at, "marker two")
		a.MustAccept(marker2)
		eq(t, "alice's live event after the due signals", a2.NextLive("due").ID, marker2.ID)
		eq(t, "bob's next live event", b.NextLive("live").ID, marker2.ID)
		markerB := alice.Event(1, at, "marker in B")
		p1.dialHost(t, hostB).MustAccept(markerB)
		eq(t, "alice's first live event in another community", ab.NextLive("live").ID, markerB.ID)
	})
}

// TestReminderSweeper: the relay's own sweeper signals a due reminder by
// the relay's clock, with no call from outside.
func TestReminderSweeper(t *testing.T) {
	forBackends(t, func(t *testing.T, st store.Backend) {
		clk := fakeclock.New(time.Now())
		tr := backendRelay(t, st, WithClock(clk.Now), WithLimits(Limits{ReminderSweepInterval: 10 * time.Millisecond}))
		alice := newSigner(t)
		c := tr.dial(t)
		c.AuthAs(alice, tr.host)
		at := now()
		r := reminder(alice, at, "sweep", at+90, "ciphertext")
		c.MustAccept(r)
		c.Subscribe("due", nostr.Filter{Kinds: []int{nostr.KindReminder}, Authors: []string{alice.Pub()}})
		clk.Advance(3 * time.Minute)
		eq(t, "due signal", c.NextLive("due").ID, r.ID)
	})
}
