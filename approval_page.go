package buzz

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// ApprovalsPath is where a community's approval pages live:
// GET /approvals/{token} on the community's host.
const ApprovalsPath = "/approvals"

// approvalPageTemplate is the approval page: what is asked, by whom, until
// when, its status, and (while pending) Approve and Deny buttons that sign
// a 46030/46031 with the visitor's NIP-07 signer (window.nostr) and send
// it over the relay's WebSocket on this host, answering NIP-42 AUTH when
// asked. Nothing is loaded from elsewhere; the one inline script runs
// under a per-response nonce.
var approvalPageTemplate = template.Must(template.New("approval").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{if .Found}}Approval requested: {{.Workflow}}{{else}}Approval link not available{{end}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f;background:#fafafa;line-height:1.5}
h1{font-size:1.6rem;margin:0 0 1rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.4rem 1rem;margin:0 0 1.5rem}
dt{font-weight:600;color:#444}
dd{margin:0;overflow-wrap:anywhere}
.msg{white-space:pre-wrap;background:#fff;border:1px solid #ddd;border-radius:8px;padding:.75rem 1rem}
button{font:inherit;font-size:1.05rem;padding:.6rem 1.4rem;border-radius:8px;border:2px solid #1d1d1f;cursor:pointer;margin-right:.75rem}
button:focus-visible{outline:3px solid #0a58ca;outline-offset:2px}
#approve{background:#0f6b2f;color:#fff;border-color:#0f6b2f}
#deny{background:#fff;color:#8a1111;border-color:#8a1111}
button:disabled{opacity:.5;cursor:not-allowed}
#outcome{margin-top:1.25rem;font-weight:600}
</style>
</head>
<body>
<main>
{{if .Found}}
<h1>Approval requested</h1>
<dl>
<dt>Workflow</dt><dd id="workflow">{{.Workflow}}</dd>
<dt>Step</dt><dd id="step">{{.Step}}</dd>
<dt>Requested by</dt><dd id="requester">{{.Requester}}</dd>
<dt>Expires</dt><dd><time id="expires" datetime="{{.ExpiresISO}}">{{.Expires}}</time></dd>
<dt>Status</dt><dd id="status">{{.Status}}</dd>
</dl>
{{if .Message}}<p class="msg" id="message">{{.Message}}</p>{{end}}
{{if .Pending}}
<div id="actions" data-approval="{{.ApprovalID}}" data-channel="{{.Channel}}">
<button type="button" id="approve">Approve</button>
<button type="button" id="deny">Deny</button>
</div>
<p>The buttons sign your decision with your Nostr browser extension (NIP-07).</p>
{{end}}
<p id="outcome" role="status" aria-live="polite"></p>
{{if .Pending}}<script nonce="{{.Nonce}}">
(function(){
  var box=document.getElementById('actions'), out=document.getElementById('outcome'), status=document.getElementById('status');
  var buttons=box.querySelectorAll('button');
  function show(t){out.textContent=t;}
  function busy(b){for(var i=0;i<buttons.length;i++){buttons[i].disabled=b;}}
  async function decide(grant){
    if(!window.nostr||!window.nostr.signEvent){show('No Nostr signer found: install a NIP-07 browser extension and reload.');return;}
    busy(true);show('Signing…');
    var ev;
    try{
      ev=await window.nostr.signEvent({kind:grant?46030:46031,created_at:Math.floor(Date.now()/1000),
        tags:[['d',box.dataset.approval],['h',box.dataset.channel]],content:''});
    }catch(e){show('Signing was refused.');busy(false);return;}
    show('Sending…');
    var url=(location.protocol==='https:'?'wss://':'ws://')+location.host+'/';
    var ws=new WebSocket(url), retried=false, authID='', done=false;
    ws.onopen=function(){ws.send(JSON.stringify(['EVENT',ev]));};
    ws.onerror=function(){if(done)return;show('Could not reach the relay.');busy(false);};
    ws.onmessage=async function(m){
      var msg;try{msg=JSON.parse(m.data);}catch(e){return;}
      if(msg[0]==='AUTH'&&typeof msg[1]==='string'){
        try{
          var a=await window.nostr.signEvent({kind:22242,created_at:Math.floor(Date.now()/1000),tags:[['relay',url],['challenge',msg[1]]],content:''});
          authID=a.id;ws.send(JSON.stringify(['AUTH',a]));
        }catch(e){}
        return;
      }
      if(msg[0]!=='OK')return;
      if(msg[1]===authID){if(retried)ws.send(JSON.stringify(['EVENT',ev]));return;}
      if(msg[1]!==ev.id)return;
      if(msg[2]){
        var st=grant?'granted':'denied';
        done=true;status.textContent=st;box.hidden=true;show(grant?'Approved. The workflow continues.':'Denied. The workflow run is cancelled.');
        ws.close();return;
      }
      var text=String(msg[3]||'');
      if(text.indexOf('auth-required')===0&&!retried){retried=true;if(authID)ws.send(JSON.stringify(['EVENT',ev]));return;}
      done=true;show('Not accepted: '+text);busy(false);ws.close();
    };
  }
  document.getElementById('approve').addEventListener('click',function(){decide(true);});
  document.getElementById('deny').addEventListener('click',function(){decide(false);});
})();
</script>{{end}}
{{else}}
<h1>Approval link not available</h1>
<p id="status">This approval link is unknown or has expired. Ask the workflow's owner for a new request.</p>
{{end}}
</main>
</body>
</html>
`))

type approvalPageData struct {
	Found, Pending                     bool
	Workflow, Step, Requester, Message string
	Expires, ExpiresISO, Status        string
	ApprovalID, Channel, Nonce         string
}

func (r *Relay) registerApprovalPage() {
	if r.wf == nil {
		return
	}
	r.HandleCommunity("GET "+ApprovalsPath+"/{token}", r.serveApprovalPage)
}

// serveApprovalPage serves GET /approvals/{token}. An unknown token,
// another community's, and an expired one get the same 404 page; a
// decided one shows its final status.
func (r *Relay) serveApprovalPage(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	var nb [16]byte
	_, _ = rand.Read(nb[:])
	d := approvalPageData{Nonce: base64.StdEncoding.EncodeToString(nb[:])}
	code := http.StatusNotFound
	v, err := r.wf.engine.ApprovalByToken(req.Context(), tc.Community(), req.PathValue("token"))
	switch {
	case err == nil:
		expired := v.Status == workflow.ApprovalExpired ||
			v.Status == workflow.ApprovalPending && !time.Now().Before(v.ExpiresAt)
		if !expired {
			code, d.Found = http.StatusOK, true
			d.Pending = v.Status == workflow.ApprovalPending
			d.Workflow, d.Step, d.Message, d.Status = v.WorkflowName, v.StepID, v.Message, string(v.Status)
			if d.Workflow == "" {
				d.Workflow = v.Workflow.String()
			}
			d.Requester = v.Requester
			if npub, err := nostr.EncodeNpub(v.Requester); err == nil {
				d.Requester = npub
			}
			d.Expires = v.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC")
			d.ExpiresISO = v.ExpiresAt.UTC().Format(time.RFC3339)
			d.ApprovalID, d.Channel = v.ID(), v.Channel.String()
		}
	case errors.Is(err, workflow.ErrNotFound):
	default:
		r.log.ErrorContext(req.Context(), "buzz: approval page", "err", err)
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := approvalPageTemplate.Execute(&buf, d); err != nil {
		r.log.ErrorContext(req.Context(), "buzz: approval page", "err", err)
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-"+d.Nonce+"'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
