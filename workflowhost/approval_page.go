package workflowhost

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

// approvalPageTemplate is the approval page: what is asked, by whom, in
// which channel (by its NIP-29 group id), until when, and its status. A
// pending request has Approve and Deny buttons that sign a 46030/46031
// with the visitor's NIP-07 signer (window.nostr) and send it over the
// relay's WebSocket on this host, once per click: when the relay answers
// auth-required the page authenticates (NIP-42) and resends that decision
// once. A decided request says who decided (npub) and when (UTC), both
// when loaded afterwards and right after deciding (the page reloads its
// own content); an expired one says so. Nothing is loaded from elsewhere;
// the one inline script runs under a per-response nonce.
var approvalPageTemplate = template.Must(template.New("approval").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{if .Found}}{{.Heading}}: {{.Workflow}}{{else}}Approval link not available{{end}}</title>
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
#decision{font-weight:600}
</style>
</head>
<body>
<main id="main">
{{if .Found}}
<h1 id="heading">{{.Heading}}</h1>
{{if .Decided}}<p id="decision">{{.Heading}} by {{.DecidedBy}} at {{.DecidedAt}}.</p>{{end}}
{{if .Expired}}<p id="decision">This request expired at {{.Expires}} without a decision; the workflow run did not continue.</p>{{end}}
<dl>
<dt>Workflow</dt><dd id="workflow">{{.Workflow}}</dd>
<dt>Step</dt><dd id="step">{{.Step}}</dd>
{{if .Channel}}<dt>Channel</dt><dd id="channel">{{.Channel}}{{if .ChannelName}} ({{.ChannelName}}){{end}}</dd>{{end}}
<dt>Requested by</dt><dd id="requester">{{.Requester}}</dd>
<dt>{{if .Expired}}Expired{{else}}Expires{{end}}</dt><dd><time id="expires" datetime="{{.ExpiresISO}}">{{.Expires}}</time></dd>
<dt>Status</dt><dd id="status">{{.Status}}</dd>
{{if .Decided}}<dt>{{.Heading}} by</dt><dd id="decided-by">{{.DecidedBy}}</dd>
<dt>{{.Heading}} at</dt><dd><time id="decided-at" datetime="{{.DecidedAtISO}}">{{.DecidedAt}}</time></dd>{{end}}
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
  var box=document.getElementById('actions'), out=document.getElementById('outcome');
  var buttons=box.querySelectorAll('button'), deciding=false;
  function show(t){out.textContent=t;}
  function busy(b){deciding=b;for(var i=0;i<buttons.length;i++){buttons[i].disabled=b;}}
  // refresh replaces the page's content with the server's current view of
  // the request (who decided, when), keeping the outcome line.
  async function refresh(text){
    try{
      var r=await fetch(location.href,{cache:'no-store',credentials:'omit'});
      var doc=new DOMParser().parseFromString(await r.text(),'text/html');
      var main=doc.getElementById('main');
      if(main&&doc.getElementById('status')){
        document.getElementById('main').innerHTML=main.innerHTML;
        document.title=doc.title;
      }
    }catch(e){}
    out=document.getElementById('outcome');
    if(!out){out=document.createElement('p');out.id='outcome';document.getElementById('main').appendChild(out);}
    var a=document.getElementById('actions');if(a){a.hidden=true;}
    show(text);
  }
  async function decide(grant){
    if(deciding)return;
    if(!window.nostr||!window.nostr.signEvent){show('No Nostr signer found: install a NIP-07 browser extension and reload.');return;}
    busy(true);show('Signing…');
    var ev;
    try{
      ev=await window.nostr.signEvent({kind:grant?46030:46031,created_at:Math.floor(Date.now()/1000),
        tags:[['d',box.dataset.approval],['h',box.dataset.channel]],content:''});
    }catch(e){show('Signing was refused.');busy(false);return;}
    show('Sending…');
    var url=(location.protocol==='https:'?'wss://':'ws://')+location.host+'/';
    var ws=new WebSocket(url), done=false;
    // NIP-42: one AUTH at a time, answered once; the decision is sent
    // once, and sent again once only if the relay asked to authenticate.
    var authID='', authing=false, authed=false, wantResend=false, resent=false;
    function send(){ws.send(JSON.stringify(['EVENT',ev]));}
    function resend(){if(wantResend&&authed&&!resent){resent=true;send();}}
    function fail(t){if(done)return;done=true;show(t);busy(false);ws.close();}
    ws.onopen=function(){send();};
    ws.onerror=function(){fail('Could not reach the relay.');};
    ws.onclose=function(){fail('The relay closed the connection before answering; reload to see the request\'s status.');};
    ws.onmessage=async function(m){
      if(done)return;
      var msg;try{msg=JSON.parse(m.data);}catch(e){return;}
      if(msg[0]==='AUTH'&&typeof msg[1]==='string'){
        if(authed||authing)return;
        authing=true;
        try{
          var a=await window.nostr.signEvent({kind:22242,created_at:Math.floor(Date.now()/1000),tags:[['relay',url],['challenge',msg[1]]],content:''});
          authID=a.id;ws.send(JSON.stringify(['AUTH',a]));
        }catch(e){authing=false;fail('Signing in to the relay was refused.');}
        return;
      }
      if(msg[0]!=='OK')return;
      if(authID&&msg[1]===authID){
        authing=false;
        if(!msg[2]){fail('Not accepted: '+String(msg[3]||''));return;}
        authed=true;resend();return;
      }
      if(msg[1]!==ev.id)return;
      if(msg[2]){
        done=true;ws.close();
        refresh(grant?'Approved. The workflow continues.':'Denied. The workflow run is cancelled.');
        return;
      }
      var text=String(msg[3]||'');
      if(text.indexOf('auth-required')===0&&!resent){wantResend=true;resend();return;}
      fail('Not accepted: '+text);
    };
  }
  document.getElementById('approve').addEventListener('click',function(){decide(true);});
  document.getElementById('deny').addEventListener('click',function(){decide(false);});
})();
</script>{{end}}
{{else}}
<h1>Approval link not available</h1>
<p id="status">This approval link is unknown. Ask the workflow's owner for a new request.</p>
{{end}}
</main>
</body>
</html>
`))

// approvalTime is how the page shows a time: UTC, to the second.
const approvalTime = "2006-01-02 15:04:05 UTC"

type approvalPageData struct {
	Found, Pending, Decided, Expired   bool
	Heading                            string
	Workflow, Step, Requester, Message string
	Expires, ExpiresISO, Status        string
	DecidedBy, DecidedAt, DecidedAtISO string
	// Channel is the channel's NIP-29 group id (its h tag value);
	// ChannelName its display name, when it has one.
	Channel, ChannelName string
	ApprovalID, Nonce    string
}

// npubOr returns pubkey as an npub, or as given when it is not a pubkey.
func npubOr(pubkey string) string {
	if npub, err := nostr.EncodeNpub(pubkey); err == nil {
		return npub
	}
	return pubkey
}

// serveApprovalPage serves GET /approvals/{token}. An unknown token and
// another community's get the same 404 page; an expired one says so with
// 410 Gone; a decided one says who decided and when.
func (f *Feature) serveApprovalPage(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	var nb [16]byte
	_, _ = rand.Read(nb[:])
	d := approvalPageData{Nonce: base64.StdEncoding.EncodeToString(nb[:])}
	code := http.StatusNotFound
	v, err := f.engine.ApprovalByToken(req.Context(), tc.Community(), req.PathValue("token"))
	switch {
	case err == nil:
		code, d.Found = http.StatusOK, true
		switch {
		case v.Status == workflow.ApprovalExpired ||
			v.Status == workflow.ApprovalPending && !time.Now().Before(v.ExpiresAt):
			code, d.Expired, d.Heading, d.Status = http.StatusGone, true, "Expired", "expired"
		case v.Status == workflow.ApprovalPending:
			d.Pending, d.Heading, d.Status = true, "Approval requested", "pending"
		default:
			d.Decided, d.Status = true, string(v.Status)
			d.Heading = "Approved"
			if v.Status == workflow.ApprovalDenied {
				d.Heading = "Denied"
			}
			d.DecidedBy = npubOr(v.DecidedBy)
			d.DecidedAt = v.DecidedAt.UTC().Format(approvalTime)
			d.DecidedAtISO = v.DecidedAt.UTC().Format(time.RFC3339)
		}
		d.Workflow, d.Step, d.Message = v.WorkflowName, v.StepID, v.Message
		if d.Workflow == "" {
			d.Workflow = v.Workflow.String()
		}
		d.Requester = npubOr(v.Requester)
		d.Expires = v.ExpiresAt.UTC().Format(approvalTime)
		d.ExpiresISO = v.ExpiresAt.UTC().Format(time.RFC3339)
		d.ApprovalID = v.ID()
		if !v.Channel.IsZero() {
			d.Channel = v.Channel.String()
			if ch, err := f.channels.Channel(req.Context(), tc.Community(), v.Channel); err == nil && !ch.Deleted {
				d.Channel, d.ChannelName = ch.GroupID(), ch.Name
			}
		}
	case errors.Is(err, workflow.ErrNotFound):
	default:
		f.h.Logger().ErrorContext(req.Context(), "buzz: approval page", "err", err)
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := approvalPageTemplate.Execute(&buf, d); err != nil {
		f.h.Logger().ErrorContext(req.Context(), "buzz: approval page", "err", err)
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
