package buzz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
)

// The approval page in a real headless Chromium (Debian's chromium,
// driven with chromedp). A test NIP-07 signer is injected into every page:
// window.nostr.signEvent hands the unsigned event to Go through a CDP
// binding, Go signs it with the visitor's key and resolves the promise.

// nip07Shim is window.nostr backed by the buzzSign binding.
const nip07Shim = `(function(){
  var pending = {}, n = 0;
  window.__buzzResolve = function(id, ev){ var p = pending[id]; delete pending[id]; if (p) p(ev); };
  window.nostr = {
    getPublicKey: async function(){ return %q; },
    signEvent: function(ev){ return new Promise(function(res){ var id = ++n; pending[id] = res; window.buzzSign(JSON.stringify({id: id, event: ev})); }); }
  };
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
			signed := s.event(req.Event.Kind, req.Event.CreatedAt, req.Event.Content, req.Event.Tags...)
			js := fmt.Sprintf("window.__buzzResolve(%d, %s)", req.ID, signed.AppendJSON(nil))
			_ = chromedp.Run(ctx, chromedp.Evaluate(js, nil))
		}()
	})
	err := chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		if err := runtime.AddBinding("buzzSign").Do(ctx); err != nil {
			return err
		}
		_, err := page.AddScriptToEvaluateOnNewDocument(fmt.Sprintf(nip07Shim, s.pub())).Do(ctx)
		return err
	}))
	if err != nil {
		t.Fatalf("tab setup: %v", err)
	}
	return ctx
}

// openApproval opens url in tab ctx and returns #status's text and whether
// the buttons are there.
func openApproval(t *testing.T, ctx context.Context, url string) (status string, buttons bool) {
	t.Helper()
	var n int
	err := chromedp.Run(ctx, chromedp.Navigate(url), chromedp.WaitReady("#status", chromedp.ByID),
		chromedp.Text("#status", &status, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("button").length`, &n))
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return status, n == 2
}

// clickAndWait presses a button and waits for the outcome line. The bound
// is generous: under a loaded -race run the page's signer round trips and
// the relay's workflow steps can take seconds, and the test asserts the
// outcome, not its speed. On a timeout the error carries what the page
// showed, so a failure says where the page stopped.
func clickAndWait(ctx context.Context, button string) (string, error) {
	var out string
	err := chromedp.Run(ctx, chromedp.Click(button, chromedp.ByID),
		chromedp.Poll(`(function(){var t=document.getElementById("outcome").textContent;return (t.indexOf("Approved")===0||t.indexOf("Denied")===0||t.indexOf("Not accepted")===0)?t:false})()`, &out,
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

func TestApprovalPageInBrowser(t *testing.T) {
	bctx := browser(t)
	forBackends(t, func(t *testing.T, b store.Backend) {
		st := b.(wfBackend)
		tr := workflowRelay(t, st, newHookServer(t))
		alice, bob := newSigner(t), newSigner(t)
		ac := tr.dial(t)
		ac.authAs(alice, tr.host)
		ch := ac.createChannel(alice, "ops", channel.VisibilityOpen)
		bc := tr.dial(t)
		bc.authAs(bob, tr.host)
		bc.mustAccept(bob.event(nostr.KindJoinRequest, now(), "", chanTag(ch)))
		okResponse(t, defineNew(t, ac, alice, ch, approvalDef("any", "1h")))
		okResponse(t, defineNew(t, ac, alice, ch, strings.Replace(approvalDef("any", "2s"), "deploy", "hurry", 1)))
		ac.subscribe("live", nostr.Filter{Kinds: []int{nostr.KindApprovalRequested, nostr.KindRunFailed}, Tags: map[string][]string{"h": {ch.String()}}})
		request := func(text string) string {
			t.Helper()
			bc.mustAccept(bob.event(nostr.KindChatMessage, now(), text, chanTag(ch)))
			ev := ac.waitFor("live", func(e *nostr.Event) bool { return e.Kind == nostr.KindApprovalRequested })
			return approvalRequest(t, ev)["token"].(string)
		}
		pageURL := func(host, token string) string { return "http://" + host + ApprovalsPath + "/" + token }
		bobTab, aliceTab := visitor(t, bctx, bob), visitor(t, bctx, alice)

		t.Run("approve", func(t *testing.T) {
			tok := request("deploy v1")
			status, buttons := openApproval(t, bobTab, pageURL(tr.host, tok))
			if status != "pending" || !buttons {
				t.Fatalf("pending page: status %q, buttons %v", status, buttons)
			}
			out, err := clickAndWait(bobTab, "approve")
			if err != nil || !strings.HasPrefix(out, "Approved") {
				t.Fatalf("approve: %q %v", out, err)
			}
			status, buttons = openApproval(t, aliceTab, pageURL(tr.host, tok))
			if status != "granted" || buttons {
				t.Fatalf("second visit: status %q, buttons %v", status, buttons)
			}
		})
		t.Run("deny", func(t *testing.T) {
			tok := request("deploy v2")
			openApproval(t, aliceTab, pageURL(tr.host, tok))
			out, err := clickAndWait(aliceTab, "deny")
			if err != nil || !strings.HasPrefix(out, "Denied") {
				t.Fatalf("deny: %q %v", out, err)
			}
			if status, buttons := openApproval(t, bobTab, pageURL(tr.host, tok)); status != "denied" || buttons {
				t.Fatalf("second visit: status %q, buttons %v", status, buttons)
			}
		})
		t.Run("race", func(t *testing.T) {
			tok := request("deploy v3")
			openApproval(t, bobTab, pageURL(tr.host, tok))
			openApproval(t, aliceTab, pageURL(tr.host, tok))
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
		})
		t.Run("expired", func(t *testing.T) {
			tok := request("hurry v4")
			ac.waitFor("live", func(e *nostr.Event) bool { return e.Kind == nostr.KindRunFailed })
			status, buttons := openApproval(t, bobTab, pageURL(tr.host, tok))
			if buttons || !strings.Contains(status, "unknown or has expired") {
				t.Fatalf("expired page: status %q, buttons %v", status, buttons)
			}
		})
		t.Run("wrong host", func(t *testing.T) {
			tok := request("deploy v5")
			port := tr.host[strings.LastIndexByte(tr.host, ':'):]
			other, err := tenant.NormalizeHost("other.example" + port)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.EnsureCommunity(t.Context(), other); err != nil {
				t.Fatal(err)
			}
			status, buttons := openApproval(t, bobTab, pageURL(other, tok))
			if buttons || !strings.Contains(status, "unknown or has expired") {
				t.Fatalf("foreign host page: status %q, buttons %v", status, buttons)
			}
			// Still pending on its own host.
			if status, _ := openApproval(t, bobTab, pageURL(tr.host, tok)); status != "pending" {
				t.Fatalf("own host after a foreign visit: %q", status)
			}
		})
	})
}
