package buzz

import (
	"encoding/json"
	"os"
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
			ev := s.event(fc.Template.Kind, now(), fc.Template.Content, fc.Template.Tags...)
			ok := c.publish(ev)
			if ok.OK != fc.OK || ok.Message != fc.Message {
				t.Errorf("%s: OK %v %q, want %v %q (rule %s)", fc.Name, ok.OK, ok.Message, fc.OK, fc.Message, fc.Rule)
			}
			if !fc.OK {
				mustPrefix(t, fc.Name, ok.Message, fc.OKPrefix)
				continue
			}
			// Accepted cases are stored and read back byte for byte.
			got := c.req("q", nostr.Filter{IDs: []string{ev.ID}})
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
	c.mustAccept(s.event(ingest.KindRepository, now(), "", nostr.Tag{"d", "buzz"}, nostr.Tag{"clone", "https://git.example/buzz.git"}))
	ok := c.publish(s.event(ingest.KindRepository, now(), "", nostr.Tag{"d", "../etc"}))
	eq(t, "accepted", ok.OK, false)
	mustPrefix(t, "message", ok.Message, "invalid: repository repo-id: ")
}
