package workflowhost

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

	"github.com/buzzrelay/buzz"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/internal/tracetest"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
)

// wfCall sends a NIP-98 signed request (s nil: unsigned) for path to the
// relay with Host host.
func wfCall(t *testing.T, tr *testRelay, s *signer, method, host, path string) (int, []byte) {
	t.Helper()
	var body []byte
	if method == http.MethodPost {
		body = []byte("{}")
	}
	req, err := http.NewRequest(method, tr.Srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if s != nil {
		nonce := make([]byte, 8)
		_, _ = rand.Read(nonce)
		tags := []nostr.Tag{{"u", "http://" + host + path}, {"method", method}, {"nonce", hex.EncodeToString(nonce)}}
		if body != nil {
			sum := sha256.Sum256(body)
			tags = append(tags, nostr.Tag{"payload", hex.EncodeToString(sum[:])})
		}
		ev := s.Event(nostr.KindHTTPAuth, now(), "", tags...)
		req.Header.Set("Authorization", nip98.Scheme+" "+base64.StdEncoding.EncodeToString(ev.AppendJSON(nil)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestWorkflowHTTPAPI(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		rec := trace.NewRecorder()
		tr := workflowRelay(t, st, newHookServer(t), buzz.WithTracer(rec.Open))
		defer func() {
			if seen := tracetest.CheckTraces(t, rec, false); !seen["read_by_id_rows"] {
				t.Error("the workflow routes traced no rows")
			}
		}()
		alice, bob, carol := newSigner(t), newSigner(t), newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		ch := ac.createChannel(alice, "ops", channel.VisibilityOpen)
		priv := ac.createChannel(alice, "secret", channel.VisibilityPrivate)
		bc := tr.dial(t)
		bc.AuthAs(bob, tr.Host)
		bc.MustAccept(bob.Event(nostr.KindJoinRequest, now(), "", chanTag(ch)))
		wfID := workflow.NewID()
		okResponse(t, func() *nostr.OKMessage { _, ok := bc.define(bob, wfID, ch, echoYAML); return ok }())
		privID := workflow.NewID()
		okResponse(t, func() *nostr.OKMessage { _, ok := ac.define(alice, privID, priv, echoYAML); return ok }())
		// Three runs.
		for i := 0; i < 3; i++ {
			bc.MustAccept(bob.Event(nostr.KindChatMessage, now(), "ping "+string(rune('a'+i)), chanTag(ch)))
		}

		// Unsigned: 401.
		if code, _ := wfCall(t, tr, nil, "GET", tr.Host, "/workflows/"+wfID.String()); code != 401 {
			t.Fatalf("unsigned: %d", code)
		}
		// List and get.
		code, body := wfCall(t, tr, carol, "GET", tr.Host, "/workflows?channel="+ch.String())
		var list struct{ Workflows []workflowJSON }
		if code != 200 || json.Unmarshal(body, &list) != nil || len(list.Workflows) != 1 || list.Workflows[0].ID != wfID.String() || list.Workflows[0].Trigger != "message_posted" {
			t.Fatalf("list: %d %s", code, body)
		}
		code, body = wfCall(t, tr, carol, "GET", tr.Host, "/workflows/"+wfID.String())
		var one workflowJSON
		if code != 200 || json.Unmarshal(body, &one) != nil || one.Owner != bob.Pub() || !one.Enabled || len(one.Definition) == 0 {
			t.Fatalf("get: %d %s", code, body)
		}
		// Runs, paginated, each with its trace (runs complete asynchronously).
		var runs struct {
			Runs       []runJSON
			NextCursor string `json:"next_cursor"`
		}
		for {
			code, body = wfCall(t, tr, carol, "GET", tr.Host, "/workflows/"+wfID.String()+"/runs")
			if code != 200 || json.Unmarshal(body, &runs) != nil {
				t.Fatalf("runs: %d %s", code, body)
			}
			done := len(runs.Runs) == 3
			for _, r := range runs.Runs {
				done = done && r.Status == "completed"
			}
			if done {
				break
			}
		}
		for _, r := range runs.Runs {
			if len(r.Trace) != 1 || r.Trace[0].StepID != "reply" || r.Trace[0].Status != workflow.StepCompleted {
				t.Fatalf("trace %+v", r.Trace)
			}
		}
		code, body = wfCall(t, tr, carol, "GET", tr.Host, "/workflows/"+wfID.String()+"/runs?limit=2")
		if code != 200 || json.Unmarshal(body, &runs) != nil || len(runs.Runs) != 2 || runs.NextCursor == "" {
			t.Fatalf("page 1: %d %s", code, body)
		}
		first := runs.Runs[0].ID
		code, body = wfCall(t, tr, carol, "GET", tr.Host, "/workflows/"+wfID.String()+"/runs?limit=2&cursor="+runs.NextCursor)
		if code != 200 || json.Unmarshal(body, &runs) != nil || len(runs.Runs) != 1 || runs.NextCursor != "" || runs.Runs[0].ID == first {
			t.Fatalf("page 2: %d %s", code, body)
		}
		for _, q := range []string{"?limit=0", "?limit=x", "?cursor=bogus"} {
			if code, body := wfCall(t, tr, carol, "GET", tr.Host, "/workflows/"+wfID.String()+"/runs"+q); code != 400 {
				t.Fatalf("runs%s: %d %s", q, code, body)
			}
		}

		// Enable/disable: carol (no role) is refused; alice (channel owner)
		// and bob (the workflow's owner) may.
		if code, body := wfCall(t, tr, carol, "POST", tr.Host, "/workflows/"+wfID.String()+"/disable"); code != 403 {
			t.Fatalf("carol disables: %d %s", code, body)
		}
		if code, body := wfCall(t, tr, alice, "POST", tr.Host, "/workflows/"+wfID.String()+"/disable"); code != 200 || !strings.Contains(string(body), `"enabled":false`) {
			t.Fatalf("alice disables: %d %s", code, body)
		}
		if wf, _ := st.Workflow(t.Context(), tr.tc.Community(), wfID); wf.Enabled {
			t.Fatal("still enabled")
		}
		if code, _ := wfCall(t, tr, bob, "POST", tr.Host, "/workflows/"+wfID.String()+"/enable"); code != 200 {
			t.Fatalf("bob enables: %d", code)
		}

		// Not readable, unknown, or another community's: the same 404 bytes.
		other := "other.example"
		if _, _, err := st.EnsureCommunity(t.Context(), other); err != nil {
			t.Fatal(err)
		}
		random := workflow.NewID().String()
		for _, path := range []string{"", "/runs"} {
			_, want := wfCall(t, tr, carol, "GET", tr.Host, "/workflows/"+random+path)
			for name, got := range map[string][]byte{
				"private channel's workflow": second(wfCall(t, tr, carol, "GET", tr.Host, "/workflows/"+privID.String()+path)),
				"foreign host, known id":     second(wfCall(t, tr, carol, "GET", other, "/workflows/"+wfID.String()+path)),
				"foreign host, random id":    second(wfCall(t, tr, carol, "GET", other, "/workflows/"+random+path)),
				"malformed id":               second(wfCall(t, tr, carol, "GET", tr.Host, "/workflows/nope"+path)),
			} {
				if !bytes.Equal(got, want) {
					t.Errorf("%s%s: %s, want %s", name, path, got, want)
				}
			}
		}
		_, want := wfCall(t, tr, alice, "POST", other, "/workflows/"+random+"/disable")
		if _, got := wfCall(t, tr, alice, "POST", other, "/workflows/"+wfID.String()+"/disable"); !bytes.Equal(got, want) {
			t.Errorf("foreign disable: %s, want %s", got, want)
		}
		_, want = wfCall(t, tr, carol, "GET", other, "/workflows?channel="+workflow.NewID().String())
		if _, got := wfCall(t, tr, carol, "GET", other, "/workflows?channel="+ch.String()); !bytes.Equal(got, want) {
			t.Errorf("foreign channel list: %s, want %s", got, want)
		}
		if _, got := wfCall(t, tr, carol, "GET", tr.Host, "/workflows?channel="+priv.String()); !bytes.Equal(got, want) {
			t.Errorf("private channel list: %s, want %s", got, want)
		}
	})
}

func second(_ int, b []byte) []byte { return b }
