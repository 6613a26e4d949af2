package buzz

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/nostr"
)

// TestProjectFixturesOverWebSocket sends every case of the kind 30621
// fixtures file, signed by a fresh key, as an EVENT over a real WebSocket
// and checks the OK — on both storage backends.
func TestProjectFixturesOverWebSocket(t *testing.T) {
	raw, err := os.ReadFile("ingest/testdata/kind30621.fixtures.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Cases []struct {
			Name     string `json:"name"`
			Rule     string `json:"rule"`
			OK       bool   `json:"ok"`
			OKPrefix string `json:"ok_prefix"`
			Message  string `json:"message"`
			Template struct {
				Kind    int        `json:"kind"`
				Content string     `json:"content"`
				Tags    nostr.Tags `json:"tags"`
			} `json:"template"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, b testBackend) {
		p := startPod(t, b.open(t), "projects.example")
		c := p.dial(t)
		for _, fc := range fx.Cases {
			s := newSigner(t)
			ev := s.Event(fc.Template.Kind, now(), fc.Template.Content, fc.Template.Tags...)
			ok := c.Publish(ev)
			if ok.OK != fc.OK || ok.Message != fc.Message {
				t.Errorf("%s: OK %v %q, want %v %q (rule %s)", fc.Name, ok.OK, ok.Message, fc.OK, fc.Message, fc.Rule)
			}
			if !fc.OK {
				mustPrefix(t, fc.Name, ok.Message, fc.OKPrefix)
				continue
			}
			// Accepted cases are stored and read back byte for byte.
			got := c.Req("q", nostr.Filter{IDs: []string{ev.ID}})
			if len(got) != 1 || got[0].ID != ev.ID {
				t.Errorf("%s: stored event not returned", fc.Name)
			}
		}
	})
}

// TestRepositoryOverWebSocket checks that kind 30617 is validated on the
// live write path (a refusal names its rule).
func TestRepositoryOverWebSocket(t *testing.T) {
	tr := newTestRelay(t)
	c := tr.dial(t)
	s := newSigner(t)
	c.MustAccept(s.Event(nostr.KindRepository, now(), "", nostr.Tag{"d", "buzz"}, nostr.Tag{"clone", "https://git.example/buzz.git"}))
	ok := c.Publish(s.Event(nostr.KindRepository, now(), "", nostr.Tag{"d", "../etc"}))
	eq(t, "accepted", ok.OK, false)
	mustPrefix(t, "message", ok.Message, "invalid: repository repo-id: ")
}

// projectFilter reads the projects of author with d.
func projectFilter(author, d string) nostr.Filter {
	return nostr.Filter{Kinds: []int{nostr.KindProject}, Authors: []string{author}, Tags: map[string][]string{"d": {d}}}
}

func projectIDs(c *rawClient, f nostr.Filter) []string { return ids(c.Req("p", f)) }

// TestProjectStorage pins Buzz's storage behaviour for projects end to end (EVENT and
// REQ over WebSocket) on both backends: newer-wins replacement, one d under
// two authors, an a-tag deletion between two versions, a deletion at the
// head's own timestamp, and a version at or before a coordinate tombstone
// arriving after it — refused, also after a restart and, on PostgreSQL,
// through another pod.
func TestProjectStorage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		const host = "projects.example"
		st := b.open(t)
		p := startPod(t, st, host)
		c := p.dial(t)
		alice, bob := newSigner(t), newSigner(t)
		t0 := now() - 100
		d := nostr.Tag{"d", "platform"}
		coord := "30621:" + alice.Pub() + ":platform"
		repo := alice.Event(nostr.KindRepository, t0, "", nostr.Tag{"d", "buzz"})
		c.MustAccept(repo)
		member := nostr.Tag{"a", "30617:" + alice.Pub() + ":buzz"}

		// Newer wins; the older version coming back is refused.
		v1 := alice.Event(nostr.KindProject, t0+10, "", d, nostr.Tag{"name", "V1"}, member)
		v2 := alice.Event(nostr.KindProject, t0+20, "", d, nostr.Tag{"name", "V2"}, member)
		c.MustAccept(v1)
		c.MustAccept(v2)
		eq(t, "head after V2", strings.Join(projectIDs(c, projectFilter(alice.Pub(), "platform")), ","), strings.Join([]string{v2.ID}, ","))
		ok := c.Publish(v1)
		eq(t, "V1 again", ok.Message, ingest.MsgSuperseded)

		// One d under two authors stays two projects.
		bv := bob.Event(nostr.KindProject, t0+5, "", d, member)
		c.MustAccept(bv)
		both := c.Req("p", nostr.Filter{Kinds: []int{nostr.KindProject}, Tags: map[string][]string{"d": {"platform"}}})
		eq(t, "projects named platform", len(both), 2)

		// A deletion timestamped between V1 and V2 leaves V2 live.
		c.MustAccept(alice.Event(nostr.KindDeletion, t0+15, "", nostr.Tag{"a", coord}))
		eq(t, "head after a stale deletion", strings.Join(projectIDs(c, projectFilter(alice.Pub(), "platform")), ","), strings.Join([]string{v2.ID}, ","))

		// A deletion at the head's own timestamp deletes it, and leaves the
		// repository it names and bob's project alone.
		c.MustAccept(alice.Event(nostr.KindDeletion, t0+20, "", nostr.Tag{"a", coord}))
		eq(t, "head after deletion at its timestamp", len(projectIDs(c, projectFilter(alice.Pub(), "platform"))), 0)
		eq(t, "repository kept", strings.Join(ids(c.Req("r", nostr.Filter{IDs: []string{repo.ID}})), ","), strings.Join([]string{repo.ID}, ","))
		eq(t, "bob's project kept", strings.Join(projectIDs(c, projectFilter(bob.Pub(), "platform")), ","), strings.Join([]string{bv.ID}, ","))

		// A version at or before the tombstone, arriving after it, is
		// refused; a later one is a new head.
		late := func(at int64, name string) *nostr.Event {
			return alice.Event(nostr.KindProject, at, "", d, nostr.Tag{"name", name})
		}
		for _, at := range []int64{t0 + 12, t0 + 20} {
			ok := c.Publish(late(at, "late"))
			eq(t, "late version at tombstone", ok.OK, false)
			eq(t, "late version message", ok.Message, ingest.MsgDeleted)
		}
		eq(t, "still deleted", len(projectIDs(c, projectFilter(alice.Pub(), "platform"))), 0)

		// After a restart (a new relay on a new store instance).
		p.stop()
		if !b.shared {
			_ = st.Close()
		}
		p2 := startPod(t, b.open(t), host)
		c2 := p2.dial(t)
		ok = c2.Publish(late(t0+19, "after restart"))
		eq(t, "late version after restart", ok.Message, ingest.MsgDeleted)
		eq(t, "still deleted after restart", len(projectIDs(c2, projectFilter(alice.Pub(), "platform"))), 0)

		if b.shared {
			// Across pods: the tombstone is written through one pod, the
			// late version arrives at another.
			p3 := startPod(t, b.open(t), host)
			c3 := p3.dial(t)
			other := "30621:" + alice.Pub() + ":other"
			o1 := alice.Event(nostr.KindProject, t0+30, "", nostr.Tag{"d", "other"})
			c2.MustAccept(o1)
			c2.MustAccept(alice.Event(nostr.KindDeletion, t0+40, "", nostr.Tag{"a", other}))
			ok := c3.Publish(alice.Event(nostr.KindProject, t0+35, "", nostr.Tag{"d", "other"}, nostr.Tag{"name", "late"}))
			eq(t, "late version on another pod", ok.Message, ingest.MsgDeleted)
			eq(t, "deleted on every pod", len(projectIDs(c3, projectFilter(alice.Pub(), "other"))), 0)
		}

		v3 := late(t0+21, "V3")
		c2.MustAccept(v3)
		eq(t, "a version after the tombstone is the new head", strings.Join(projectIDs(c2, projectFilter(alice.Pub(), "platform")), ","), strings.Join([]string{v3.ID}, ","))
	})
}
