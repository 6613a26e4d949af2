package buzz

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

// nipProbes tell, for each NIP of the table, whether relay tr serves it,
// by using it as a client would. Every entry of nipTable needs one.
var nipProbes = map[int]func(t *testing.T, tr *testRelay) bool{
	1: func(t *testing.T, tr *testRelay) bool {
		c, s := tr.dial(t), newSigner(t)
		ev := s.Event(nostr.KindNote, now(), "nip-01 probe")
		if !c.Publish(ev).OK {
			return false
		}
		return len(c.Req("one", nostr.Filter{IDs: []string{ev.ID}})) == 1
	},
	9: func(t *testing.T, tr *testRelay) bool {
		c, s := tr.dial(t), newSigner(t)
		ev := s.Event(nostr.KindNote, now(), "nip-09 probe")
		c.MustAccept(ev)
		if !c.Publish(s.Event(nostr.KindDeletion, now(), "", nostr.Tag{"e", ev.ID})).OK {
			return false
		}
		return len(c.Req("gone", nostr.Filter{IDs: []string{ev.ID}})) == 0
	},
	11: func(t *testing.T, tr *testRelay) bool {
		st, h, body := tr.get(t, tr.host, "application/nostr+json")
		var d nip11.Document
		return st == http.StatusOK && h.Get("Content-Type") == "application/nostr+json" && json.Unmarshal([]byte(body), &d) == nil
	},
	17: giftWrapsGated,
	43: func(t *testing.T, tr *testRelay) bool {
		// Relay membership required: a key the community has not made a
		// member is refused, after AUTH, in Buzz's words.
		c, s := tr.dial(t), newSigner(t)
		c.AuthAs(s, tr.host)
		return c.Publish(s.Event(nostr.KindNote, now(), "nip-43 probe")).Message == "restricted: not a relay member"
	},
	25: func(t *testing.T, tr *testRelay) bool {
		c, s := tr.dial(t), newSigner(t)
		ev := s.Event(nostr.KindNote, now(), "nip-25 probe")
		c.MustAccept(ev)
		if !c.Publish(s.Event(7, now(), "+", nostr.Tag{"e", ev.ID}, nostr.Tag{"p", s.Pub()})).OK {
			return false
		}
		return len(c.Req("reactions", nostr.Filter{Kinds: []int{7}, Tags: map[string][]string{"e": {ev.ID}}})) == 1
	},
	29: func(t *testing.T, tr *testRelay) bool {
		c, s := tr.dial(t), newSigner(t)
		c.AuthAs(s, tr.host)
		id := storetest.NewChannelID()
		if !c.Publish(s.Event(nostr.KindCreateChannel, now(), "", chanTag(id), nostr.Tag{"name", "probe"})).OK {
			return false
		}
		// A NIP-29 relay answers with the group's relay-signed metadata.
		return len(c.Req("meta", nostr.Filter{Kinds: []int{39000}, Tags: map[string][]string{"d": {id.String()}}})) == 1
	},
	40: func(t *testing.T, tr *testRelay) bool {
		c, s := tr.dial(t), newSigner(t)
		ev := s.Event(nostr.KindNote, now(), "nip-40 probe", nostr.Tag{"expiration", strconv.FormatInt(now()-60, 10)})
		c.Publish(ev) // refused, or stored and never served
		return len(c.Req("expired", nostr.Filter{IDs: []string{ev.ID}})) == 0
	},
	42: func(t *testing.T, tr *testRelay) bool {
		c, s := tr.dial(t), newSigner(t) // dial reads the AUTH challenge
		ev := s.Event(nostr.KindClientAuth, now(), "", nostr.Tag{"challenge", c.Challenge}, nostr.Tag{"relay", "ws://" + tr.host})
		return c.Auth(ev).OK
	},
	77: func(t *testing.T, tr *testRelay) bool {
		c := tr.dial(t)
		c.Send("NEG-OPEN", "n", nostr.Filter{Kinds: []int{nostr.KindNote}}, "6100000200")
		raw, err := c.NextRaw()
		return err == nil && strings.HasPrefix(string(raw), `["NEG-MSG","n","61`)
	},
	45: func(t *testing.T, tr *testRelay) bool {
		c := tr.dial(t)
		c.Send("COUNT", "n", nostr.Filter{Kinds: []int{nostr.KindNote}})
		_, ok := c.Next().(*nostr.CountMessage)
		return ok
	},
	50: func(t *testing.T, tr *testRelay) bool {
		c, s := tr.dial(t), newSigner(t)
		ev := s.Event(nostr.KindNote, now(), "zanzibar searchable probe")
		c.MustAccept(ev)
		got := c.Req("find", nostr.Filter{Search: "zanzibar", Authors: []string{s.Pub()}})
		return len(got) == 1 && got[0].ID == ev.ID
	},
	56: func(t *testing.T, tr *testRelay) bool {
		// Reports go to the moderators' queue: they are not served to
		// clients, and COUNT does not count them.
		c, s, target := tr.dial(t), newSigner(t), newSigner(t)
		c.AuthAs(s, tr.host)
		rep := s.Event(nostr.KindReport, now(), "", nostr.Tag{"p", target.Pub(), "spam"})
		if !c.Publish(rep).OK {
			return false
		}
		return len(c.Req("rep", nostr.Filter{IDs: []string{rep.ID}})) == 0
	},
	59: giftWrapsGated,
	98: func(t *testing.T, tr *testRelay) bool {
		return tr.routeAnswers(t, "POST", queryPath)
	},
}

// giftWrapsGated: a gift wrap is readable by its recipient only, so asking
// for gift wraps before authenticating is refused with auth-required.
func giftWrapsGated(t *testing.T, tr *testRelay) bool {
	c := tr.dial(t)
	c.Send("REQ", "wraps", nostr.Filter{Kinds: []int{nostr.KindGiftWrap}})
	for {
		switch m := c.Next().(type) {
		case *nostr.ClosedMessage:
			return strings.HasPrefix(m.Message, "auth-required:")
		case *nostr.EOSEMessage:
			return false
		}
	}
}

// routeAnswers reports whether the community host serves method path
// (anything but 404 and 405).
func (tr *testRelay) routeAnswers(t *testing.T, method, path string) bool {
	t.Helper()
	req, err := http.NewRequest(method, tr.srv.URL+path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = tr.host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed
}

// plainTestRelay is a relay with nothing switched on beyond what every
// relay serves: no channels (so no moderation), no HTTP API, and a store
// that keeps no names.
func plainTestRelay(t *testing.T) *testRelay {
	t.Helper()
	base := newTestRelay(t)
	rel, err := New(WithStore(eventsOnly{base.store}), WithDirectory(base.store), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rel)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rel.Shutdown(ctx)
		srv.Close()
	})
	host, err := tenant.NormalizeHost(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := base.store.EnsureCommunity(t.Context(), host); err != nil {
		t.Fatal(err)
	}
	return &testRelay{t: t, relay: rel, srv: srv, store: base.store, url: "ws" + strings.TrimPrefix(srv.URL, "http"), host: host}
}

// TestNIPTable: NIP-11's supported_nips lists exactly the NIPs a relay
// serves (the home page lists supported_nips: package homepage), as a client finds out by using them, for a
// relay with everything on and one with only what every relay serves.
func TestNIPTable(t *testing.T) {
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	relays := map[string]func(t *testing.T) *testRelay{
		"plain": plainTestRelay,
		"full":  func(t *testing.T) *testRelay { return newTestRelay(t, withHTTPAPI(v)) },
		// Relay membership required (NIP-43): most probes publish without
		// AUTH, so only NIP-43's is asked of it.
		"members": func(t *testing.T) *testRelay {
			return newTestRelay(t, withHTTPAPI(v), WithRelayMembershipRequired(), WithRelayKey(testMaster))
		},
	}
	only := map[string][]int{"members": {43}}
	served := map[int]map[bool]bool{} // NIP → which answers its probe gave
	for _, name := range []string{"plain", "full", "members"} {
		t.Run(name, func(t *testing.T) {
			tr := relays[name](t)
			st, _, body := tr.get(t, tr.host, "application/nostr+json")
			var doc nip11.Document
			if st != http.StatusOK || json.Unmarshal([]byte(body), &doc) != nil {
				t.Fatalf("NIP-11: %d %s", st, body)
			}
			for _, n := range nipTable {
				if o := only[name]; o != nil && !slices.Contains(o, n.Number) {
					continue
				}
				probe, ok := nipProbes[n.Number]
				if !ok {
					t.Errorf("NIP-%02d is in the table but has no probe in nipProbes", n.Number)
					continue
				}
				serves := probe(t, tr)
				if served[n.Number] == nil {
					served[n.Number] = map[bool]bool{}
				}
				served[n.Number][serves] = true
				if listed := slices.Contains(doc.SupportedNIPs, n.Number); listed != serves {
					t.Errorf("NIP-%02d: served %v, listed in supported_nips %v (%v)", n.Number, serves, listed, doc.SupportedNIPs)
				}
			}
			for _, n := range doc.SupportedNIPs {
				if only[name] != nil {
					break
				}
				if !slices.ContainsFunc(nipTable[:], func(e nipEntry) bool { return e.Number == n }) {
					t.Errorf("supported_nips lists NIP-%02d, which the table does not hold", n)
				}
			}
		})
	}
	// Each switchable entry was seen on and off, so its probe can fail
	// either way.
	for _, n := range nipTable {
		if n.on != nil && len(served[n.Number]) != 2 {
			t.Errorf("NIP-%02d is switchable but was only seen served=%v", n.Number, served[n.Number])
		}
	}
}

// notImplemented are NIPs the code names without the relay implementing
// them, each with why it is named.
var notImplemented = map[int]string{
	7:  "the approval page signs with the visitor's NIP-07 browser extension (a client-side API)",
	4:  "kind 4 is stored as any event; NIP-17 supersedes it",
	19: "bech32 npub/nsec encoding of keys (a client-side encoding)",
	44: "the encryption inside NIP-59 seals, done by the sealer",
}

// TestNIPsNamedInCodeAreListed: every NIP the relay's code names is in the
// NIP table or explained in notImplemented, so a feature added without
// its table entry fails here (and then TestNIPTable, once listed, checks
// it is served).
func TestNIPsNamedInCodeAreListed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`NIP-(\d+)`)
	named := map[int]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			n, _ := strconv.Atoi(m[1])
			named[n] = f
		}
	}
	if len(named) == 0 {
		t.Fatal("no NIP named in the package's code: the scan is broken")
	}
	for n, f := range named {
		if _, ok := notImplemented[n]; ok {
			continue
		}
		if !slices.ContainsFunc(nipTable[:], func(e nipEntry) bool { return e.Number == n }) {
			t.Errorf("%s names NIP-%02d, which is neither in nipTable nor in notImplemented", f, n)
		}
	}
	for n := range notImplemented {
		if slices.ContainsFunc(nipTable[:], func(e nipEntry) bool { return e.Number == n }) {
			t.Errorf("NIP-%02d is both in nipTable and in notImplemented", n)
		}
	}
}
