package workflowhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// The approval page in a real headless Chromium (Debian's chromium,
// driven with chromedp). A test NIP-07 signer is injected into every page:
// window.nostr.signEvent hands the unsigned event to Go through a CDP
// binding, Go signs it with the visitor's key and resolves the promise.

// nip07Shim is window.nostr backed by the buzzSign binding. It also counts,
// per page, the decisions (46030/46031) the page sends over its WebSockets
// (window.__buzzSent) and the auth-required refusals it gets for them
// (window.__buzzAuthRequired).
const nip07Shim = `(function(){
  var pending = {}, n = 0;
  window.__buzzResolve = function(id, ev){ var p = pending[id]; delete pending[id]; if (p) p(ev); };
  window.nostr = {
    getPublicKey: async function(){ return %q; },
    signEvent: function(ev){ return new Promise(function(res){ var id = ++n; pending[id] = res; window.buzzSign(JSON.stringify({id: id, event: ev})); }); }
  };
  window.__buzzSent = 0; window.__buzzAuthRequired = 0;
  var decisions = {}, WS = window.WebSocket, send = WS.prototype.send;
  WS.prototype.send = function(d){
    try { var m = JSON.parse(d); if (m[0] === 'EVENT' && (m[1].kind === 46030 || m[1].kind === 46031)) { decisions[m[1].id] = true; window.__buzzSent++; } } catch (e) {}
    return send.call(this, d);
  };
  window.WebSocket = function(url, protocols){
    var ws = protocols === undefined ? new WS(url) : new WS(url, protocols);
    ws.addEventListener('message', function(m){
      try { var msg = JSON.parse(m.data); if (msg[0] === 'OK' && decisions[msg[1]] && !msg[2] && String(msg[3]).indexOf('auth-required') === 0) window.__buzzAuthRequired++; } catch (e) {}
    });
    return ws;
  };
  window.WebSocket.prototype = WS.prototype;
})();`

// browser starts one headless Chromium for the test (other.example
// resolves to 127.0.0.1), or ends the test through testenv.Unavailable.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		testenv.Unavailable(t, "Chromium (apt-get install chromium)", errors.New("no chromium in PATH"))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("host-resolver-rules", "MAP other.example 127.0.0.1"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	if err := chromedp.Run(bctx); err != nil {
		testenv.Unavailable(t, "Chromium", err)
	}
	return bctx
}

// visitor is one browser tab whose NIP-07 signer is s.
func visitor(t *testing.T, bctx context.Context, s *signer) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(bctx)
	t.Cleanup(cancel)
	chromedp.ListenTarget(ctx, func(ev any) {
		call, ok := ev.(*runtime.EventBindingCalled)
		if !ok || call.Name != "buzzSign" {
			return
		}
		go func() {
			var req struct {
				ID    int `json:"id"`
				Event struct {
					Kind      int         `json:"kind"`
					CreatedAt int64       `json:"created_at"`
					Tags      []nostr.Tag `json:"tags"`
					Content   string      `json:"content"`
				} `json:"event"`
			}
			if err := json.Unmarshal([]byte(call.Payload), &req); err != nil {
				t.Errorf("signer payload %q: %v", call.Payload, err)
				return
			}
			signed := s.Event(req.Event.Kind, req.Event.CreatedAt, req.Event.Content, req.Event.Tags...)
			js := fmt.Sprintf("window.__buzzResolve(%d, %s)", req.ID, signed.AppendJSON(nil))
			_ = chromedp.Run(ctx, chromedp.Evaluate(js, nil))
		}()
	})
	err := chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		if err := runtime.AddBinding("buzzSign").Do(ctx); err != nil {
			return err
		}
		_, err := page.AddScriptToEvaluateOnNewDocument(fmt.Sprintf(nip07Shim, s.Pub())).Do(ctx)
		return err
	}))
	if err != nil {
		t.Fatalf("tab setup: %v", err)
	}
	return ctx
}

// approvalPage is what a tab shows of an approval page.
type approvalPage struct {
	Heading, Status, Channel string
	DecidedBy, DecidedAt     string // #decided-by, #decided-at's datetime
	Buttons                  bool
	Sent, AuthRequired       int // decisions sent, auth-required answers
}

// readApproval returns what tab ctx shows now.
func readApproval(t *testing.T, ctx context.Context) approvalPage {
	t.Helper()
	var p approvalPage
	err := chromedp.Run(ctx, chromedp.Evaluate(`(function(){
  function text(id){var e=document.getElementById(id);return e?e.textContent:"";}
  var at=document.getElementById("decided-at");
  return {Heading:text("heading")||document.querySelector("h1").textContent, Status:text("status"), Channel:text("channel"),
    DecidedBy:text("decided-by"), DecidedAt:at?at.getAttribute("datetime"):"",
    Buttons:document.querySelectorAll("#actions:not([hidden]) button").length===2,
    Sent:window.__buzzSent, AuthRequired:window.__buzzAuthRequired};
})()`, &p))
	if err != nil {
		t.Fatalf("read page: %v", err)
	}
	return p
}

// openApproval opens url in tab ctx and returns what it shows.
func openApproval(t *testing.T, ctx context.Context, url string) approvalPage {
	t.Helper()
	err := chromedp.Run(ctx, chromedp.Navigate(url), chromedp.WaitReady("#status", chromedp.ByID))
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return readApproval(t, ctx)
}

// clickAndWait presses a button and waits for the outcome line. The bound
// is generous: under a loaded -race run the page's signer round trips and
// the relay's workflow steps can take seconds, and the test asserts the
// outcome, not its speed. On a timeout the error carries what the page
// showed, so a failure says where the page stopped.
func clickAndWait(ctx context.Context, button string) (string, error) {
	var out string
	err := chromedp.Run(ctx, chromedp.Click(button, chromedp.ByID),
		chromedp.Poll(`(function(){var e=document.getElementById("outcome");var t=e?e.textContent:"";return (t.indexOf("Approved")===0||t.indexOf("Denied")===0||t.indexOf("Not accepted")===0)?t:false})()`, &out,
			chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		var shown string
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = chromedp.Run(sctx, chromedp.Evaluate(`document.getElementById("outcome").textContent+" | status: "+document.getElementById("status").textContent`, &shown))
		return out, fmt.Errorf("%w (the page showed %q)", err, shown)
	}
	return out, nil
}

// checkSentOnce fails unless the tab sent its decision once, plus once
// more only after an auth-required answer.
func checkSentOnce(t *testing.T, p approvalPage) {
	t.Helper()
	if p.AuthRequired > 1 || p.Sent != 1+p.AuthRequired {
		t.Errorf("the page sent its decision %d times after %d auth-required answers; want once, and once more after auth-required", p.Sent, p.AuthRequired)
	}
}

// checkDecided fails unless p shows heading, decided by who, at a time
// within [from, to].
func checkDecided(t *testing.T, p approvalPage, heading, status string, who *signer, from, to time.Time) {
	t.Helper()
	npub, _ := nostr.EncodeNpub(who.Pub())
	if p.Heading != heading || p.Status != status || p.DecidedBy != npub || p.Buttons {
		t.Errorf("decided page: %+v, want heading %q, status %q, decided by %s, no buttons", p, heading, status, npub)
	}
	at, err := time.Parse(time.RFC3339, p.DecidedAt)
	if err != nil || at.Before(from.Truncate(time.Second)) || at.After(to) {
		t.Errorf("decided at %q (%v), want a time between %s and %s", p.DecidedAt, err, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
}

func TestApprovalPageInBrowser(t *testing.T) {
	bctx := browser(t)
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		tr := workflowRelay(t, st, newHookServer(t))
		alice, bob := newSigner(t), newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		// A channel named as NIP-29 clients name groups: its h tag is
		// "ops-room", and the page and its decisions use that.
		const gid = "ops-room"
		h := nostr.Tag{"h", gid}
		ac.MustAccept(alice.Event(nostr.KindCreateChannel, now(), "", h, nostr.Tag{"name", "Ops"}, nostr.Tag{"visibility", string(channel.VisibilityOpen)}))
		bc := tr.dial(t)
		bc.AuthAs(bob, tr.Host)
		bc.MustAccept(bob.Event(nostr.KindJoinRequest, now(), "", h))
		define := func(yaml string) {
			t.Helper()
			okResponse(t, ac.Publish(alice.Event(nostr.KindDefinition, now(), yaml, nostr.Tag{"d", workflow.NewID().String()}, h)))
		}
		define(approvalDef("any", "1h"))
		define(strings.Replace(approvalDef("any", "2s"), "deploy", "hurry", 1))
		ac.Subscribe("live", nostr.Filter{Kinds: []int{nostr.KindApprovalRequested, nostr.KindRunFailed}, Tags: map[string][]string{"h": {gid}}})
		request := func(text string) string {
			t.Helper()
			bc.MustAccept(bob.Event(nostr.KindChatMessage, now(), text, h))
			ev := ac.waitFor("live", func(e *nostr.Event) bool { return e.Kind == nostr.KindApprovalRequested })
			return approvalRequest(t, ev)["token"].(string)
		}
		pageURL := func(host, token string) string { return "http://" + host + ApprovalsPath + "/" + token }
		bobTab, aliceTab := visitor(t, bctx, bob), visitor(t, bctx, alice)

		t.Run("approve", func(t *testing.T) {
			tok := request("deploy v1")
			p := openApproval(t, bobTab, pageURL(tr.Host, tok))
			if p.Status != "pending" || !p.Buttons || p.Heading != "Approval requested" || p.Channel != gid+" (Ops)" {
				t.Fatalf("pending page: %+v", p)
			}
			from := time.Now()
			out, err := clickAndWait(bobTab, "approve")
			if err != nil || !strings.HasPrefix(out, "Approved") {
				t.Fatalf("approve: %q %v", out, err)
			}
			to := time.Now()
			// Right after deciding, in the page that decided.
			p = readApproval(t, bobTab)
			checkSentOnce(t, p)
			checkDecided(t, p, "Approved", "granted", bob, from, to)
			// Loaded afterwards, by someone else.
			checkDecided(t, openApproval(t, aliceTab, pageURL(tr.Host, tok)), "Approved", "granted", bob, from, to)
		})
		t.Run("deny", func(t *testing.T) {
			tok := request("deploy v2")
			openApproval(t, aliceTab, pageURL(tr.Host, tok))
			from := time.Now()
			out, err := clickAndWait(aliceTab, "deny")
			if err != nil || !strings.HasPrefix(out, "Denied") {
				t.Fatalf("deny: %q %v", out, err)
			}
			to := time.Now()
			p := readApproval(t, aliceTab)
			checkSentOnce(t, p)
			checkDecided(t, p, "Denied", "denied", alice, from, to)
			checkDecided(t, openApproval(t, bobTab, pageURL(tr.Host, tok)), "Denied", "denied", alice, from, to)
		})
		t.Run("race", func(t *testing.T) {
			tok := request("deploy v3")
			openApproval(t, bobTab, pageURL(tr.Host, tok))
			openApproval(t, aliceTab, pageURL(tr.Host, tok))
			outs := make([]string, 2)
			var wg sync.WaitGroup
			for i, tab := range []context.Context{bobTab, aliceTab} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out, err := clickAndWait(tab, []string{"approve", "deny"}[i])
					if err != nil {
						t.Errorf("tab %d: %v", i, err)
					}
					outs[i] = out
				}()
			}
			wg.Wait()
			won, lost := 0, 0
			for _, o := range outs {
				switch {
				case strings.HasPrefix(o, "Approved"), strings.HasPrefix(o, "Denied"):
					won++
				case o == "Not accepted: "+msgApprovalUnknown:
					lost++
				}
			}
			if won != 1 || lost != 1 {
				t.Fatalf("race outcomes %q: want one winner and one %q", outs, msgApprovalUnknown)
			}
			checkSentOnce(t, readApproval(t, bobTab))
			checkSentOnce(t, readApproval(t, aliceTab))
		})
		t.Run("expired", func(t *testing.T) {
			tok := request("hurry v4")
			ac.waitFor("live", func(e *nostr.Event) bool { return e.Kind == nostr.KindRunFailed })
			resp, err := http.Get(pageURL(tr.Host, tok))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusGone {
				t.Errorf("expired page: HTTP %d, want 410", resp.StatusCode)
			}
			p := openApproval(t, bobTab, pageURL(tr.Host, tok))
			if p.Buttons || p.Heading != "Expired" || p.Status != "expired" || p.DecidedBy != "" {
				t.Fatalf("expired page: %+v", p)
			}
		})
		t.Run("unknown", func(t *testing.T) {
			resp, err := http.Get(pageURL(tr.Host, "no-such-token"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("unknown token: HTTP %d, want 404", resp.StatusCode)
			}
		})
		t.Run("wrong host", func(t *testing.T) {
			tok := request("deploy v5")
			port := tr.Host[strings.LastIndexByte(tr.Host, ':'):]
			other, err := tenant.NormalizeHost("other.example" + port)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.EnsureCommunity(t.Context(), other); err != nil {
				t.Fatal(err)
			}
			p := openApproval(t, bobTab, pageURL(other, tok))
			if p.Buttons || !strings.Contains(p.Status, "unknown") || p.Heading != "Approval link not available" {
				t.Fatalf("foreign host page: %+v", p)
			}
			// Still pending on its own host.
			if p := openApproval(t, bobTab, pageURL(tr.Host, tok)); p.Status != "pending" {
				t.Fatalf("own host after a foreign visit: %+v", p)
			}
		})
	})
}
