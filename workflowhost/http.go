package workflowhost

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// The workflow HTTP API, served on every community host when the relay
// authenticates HTTP requests (buzz.WithHTTPAuth), NIP-98 authenticated like the
// rest of the HTTP API (u = this community's URL; POSTs carry a payload
// tag):
//
//	GET  /workflows?channel=<uuid>        the channel's workflows
//	GET  /workflows/{id}                  one workflow, with its definition
//	POST /workflows/{id}/enable, /disable channel owner or admin, or the
//	                                      workflow's owner → the workflow
//	GET  /workflows/{id}/runs?cursor=&limit=
//	                                      its runs, newest first, each with
//	                                      its trace; limit default 100, max
//	                                      1000; next_cursor ("" at the end)
//
// The signer must be able to read the workflow's channel by exactly the
// rules of a REQ whose filter names it in "#h" (buzz.HTTPRead, the one
// read decision: not banned, a member of a members-only community, a member of
// a private channel). channel= names the channel as an h tag does (its
// NIP-29 group id: the UUID, or the name it was created with); a value a
// REQ would match no event of the channel with names nothing. A workflow
// or channel that does not exist in this community — another community's
// id, a channel the signer cannot read, a signer banned or not a member
// of a members-only community — is 404 {"error":"not_found",…} with the
// same bytes as a random id.
const (
	// WorkflowsPath is the root of the workflow HTTP API.
	WorkflowsPath = "/workflows"
)

const (
	msgWorkflowNotFound = "invalid: no such workflow"
	msgChannelNotFound  = "invalid: no such channel"
	msgWorkflowForbid   = "restricted: only the channel's owners and admins, or the workflow's owner, may enable or disable it"
	msgBadChannelParam  = "invalid: channel must be a channel's group id"
	msgBadRunPage       = "invalid: limit must be a positive integer and cursor one a previous page returned"
	msgBodyTooLarge     = "invalid: request body too large (limit 1048576 bytes)"
)

func (f *Feature) registerAPI() {
	h := f.h
	h.HandleCommunity("GET "+WorkflowsPath, f.serveWorkflowList)
	h.HandleCommunity("GET "+WorkflowsPath+"/{id}", f.serveWorkflowGet)
	h.HandleCommunity("POST "+WorkflowsPath+"/{id}/enable", func(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
		f.serveWorkflowEnable(w, req, tc, true)
	})
	h.HandleCommunity("POST "+WorkflowsPath+"/{id}/disable", func(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
		f.serveWorkflowEnable(w, req, tc, false)
	})
	h.HandleCommunity("GET "+WorkflowsPath+"/{id}/runs", f.serveWorkflowRuns)
	h.HandleCommunity("POST "+WorkflowsPath+"/{id}/webhook-secret", f.serveWebhookRotate)
}

// authenticate verifies the request's NIP-98 authorization (a POST must
// carry a payload tag, a GET has no body) or its API token, which needs
// jobs:write for a POST, jobs:read for a GET. When ok is false it has
// answered the request itself.
func (f *Feature) authenticate(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) (string, bool) {
	need := apitoken.JobsRead
	if req.Method == http.MethodPost {
		need = apitoken.JobsWrite
	}
	c, ok := f.h.AuthenticateHTTP(w, req, tc, need)
	return c.PubKey, ok
}

// internalError logs err and answers 500 without details.
func (f *Feature) internalError(w http.ResponseWriter, req *http.Request, what string, err error) {
	f.h.Logger().ErrorContext(req.Context(), "buzz: "+what, "err", err)
	apijson.Error(w, http.StatusInternalServerError, "error", apijson.MsgInternal)
}

func notFound(w http.ResponseWriter, msg string) {
	apijson.Error(w, http.StatusNotFound, "not_found", msg)
}

// readableChannel reports whether the signer may read channel id of tc's
// community (buzz.HTTPRead.MayReadChannel). gid, when not "", is how the
// request named the channel (an h tag's value): it must be the channel's
// group id, since a REQ naming it otherwise matches none of its events.
// Any refusal is false, never a reason: the caller answers as for an
// unknown channel.
func (f *Feature) readableChannel(req *http.Request, tc tenant.TenantContext, rt buzz.HTTPRead, id channel.ID, gid string) (bool, error) {
	ctx := req.Context()
	ok, err := rt.MayReadChannel(ctx, id)
	if err != nil || !ok || gid == "" {
		return ok, err
	}
	ch, err := f.channels.Channel(ctx, tc.Community(), id)
	if errors.Is(err, channel.ErrNoChannel) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return ch.GroupID() == gid, nil
}

// workflowRequest serves the start of every /workflows/{id} route: it
// authenticates the NIP-98 signer, opens the request's read trace under
// seam and returns workflow {id} when the signer may read its channel. When
// ok is false it has answered the request itself.
func (f *Feature) workflowRequest(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, seam string) (pk string, rt buzz.HTTPRead, wf workflow.Workflow, role channel.Role, ok bool) {
	if pk, ok = f.authenticate(w, req, tc); !ok {
		return
	}
	rt = f.h.ReadHTTP(tc, pk, seam)
	wf, role, ok = f.visibleWorkflow(w, req, tc, pk, rt)
	return
}

// visibleWorkflow returns workflow {id} of tc's community when the signer
// may read its channel; it answers 404 itself otherwise.
func (f *Feature) visibleWorkflow(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, pubkey string, rt buzz.HTTPRead) (wf workflow.Workflow, role channel.Role, ok bool) {
	fail := func(msg string) (workflow.Workflow, channel.Role, bool) {
		rt.Refused(req.Context(), msg)
		notFound(w, msg)
		return workflow.Workflow{}, "", false
	}
	id, ok := workflow.ParseID(req.PathValue("id"))
	if !ok {
		return fail(msgWorkflowNotFound)
	}
	wf, err := f.store.Workflow(req.Context(), tc.Community(), id)
	if errors.Is(err, workflow.ErrNotFound) {
		return fail(msgWorkflowNotFound)
	}
	if err != nil {
		f.wfInternal(w, req, rt, "workflow", err)
		return workflow.Workflow{}, "", false
	}
	readable, err := f.readableChannel(req, tc, rt, wf.Channel, "")
	if err == nil && readable {
		var member bool
		role, member, err = f.channels.ChannelRole(req.Context(), tc.Community(), wf.Channel, pubkey)
		if !member {
			role = ""
		}
	}
	if err != nil {
		f.wfInternal(w, req, rt, "channel", err)
		return workflow.Workflow{}, "", false
	}
	if !readable {
		return fail(msgWorkflowNotFound)
	}
	return wf, role, true
}

// wfInternal answers 500 and records it in the trace.
func (f *Feature) wfInternal(w http.ResponseWriter, req *http.Request, rt buzz.HTTPRead, what string, err error) {
	rt.Refused(req.Context(), apijson.MsgInternal)
	f.internalError(w, req, what, err)
}

// workflowJSON is a workflow as the API returns it.
type workflowJSON struct {
	ID         string          `json:"id"`
	Channel    string          `json:"channel"`
	Owner      string          `json:"owner"`
	Name       string          `json:"name"`
	Enabled    bool            `json:"enabled"`
	Trigger    string          `json:"trigger"`
	Revision   string          `json:"revision"`
	EventID    string          `json:"event_id,omitempty"`
	Definition json.RawMessage `json:"definition,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

func toWorkflowJSON(wf *workflow.Workflow, withDef bool) workflowJSON {
	out := workflowJSON{
		ID: wf.ID.String(), Channel: wf.Channel.String(), Owner: wf.Owner, Name: wf.Name,
		Enabled: wf.Enabled, Revision: wf.Revision(), EventID: wf.EventID,
		CreatedAt: wf.CreatedAt.UTC(), UpdatedAt: wf.UpdatedAt.UTC(),
	}
	if wf.Definition != nil {
		out.Trigger = string(wf.Definition.Trigger.On)
		if out.Name == "" {
			out.Name = wf.Definition.Name
		}
		if withDef {
			out.Definition = wf.Definition.CanonicalJSON()
		}
	}
	return out
}

func (f *Feature) serveWorkflowList(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	pk, ok := f.authenticate(w, req, tc)
	if !ok {
		return
	}
	rt := f.h.ReadHTTP(tc, pk, "workflows")
	gid := req.URL.Query().Get("channel")
	ch, ok := channel.ParseID(gid)
	if !ok {
		rt.Refused(req.Context(), msgBadChannelParam)
		apijson.Error(w, http.StatusBadRequest, "invalid", msgBadChannelParam)
		return
	}
	readable, err := f.readableChannel(req, tc, rt, ch, gid)
	if err != nil {
		f.wfInternal(w, req, rt, "channel", err)
		return
	}
	if !readable {
		rt.Refused(req.Context(), msgChannelNotFound)
		notFound(w, msgChannelNotFound)
		return
	}
	wfs, err := f.store.Workflows(req.Context(), tc.Community(), ch)
	if err != nil {
		f.wfInternal(w, req, rt, "workflows", err)
		return
	}
	out := make([]workflowJSON, len(wfs))
	rows := make([]tenant.CommunityID, len(wfs))
	for i := range wfs {
		out[i] = toWorkflowJSON(&wfs[i], false)
		rows[i] = wfs[i].Community
	}
	rt.Returned(req.Context(), rows)
	apijson.Write(w, http.StatusOK, map[string]any{"workflows": out})
}

func (f *Feature) serveWorkflowGet(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	_, rt, wf, _, ok := f.workflowRequest(w, req, tc, "workflow")
	if !ok {
		return
	}
	rt.Returned(req.Context(), []tenant.CommunityID{wf.Community})
	apijson.Write(w, http.StatusOK, toWorkflowJSON(&wf, true))
}

func (f *Feature) serveWorkflowEnable(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext, enabled bool) {
	pk, rt, wf, role, ok := f.workflowRequest(w, req, tc, "workflow_enable")
	if !ok {
		return
	}
	if role != channel.RoleOwner && role != channel.RoleAdmin && pk != wf.Owner {
		rt.Refused(req.Context(), msgWorkflowForbid)
		apijson.Error(w, http.StatusForbidden, "restricted", msgWorkflowForbid)
		return
	}
	err := f.engine.SetEnabled(req.Context(), tc.Community(), wf.ID, enabled)
	if errors.Is(err, workflow.ErrNotFound) {
		rt.Refused(req.Context(), msgWorkflowNotFound)
		notFound(w, msgWorkflowNotFound)
		return
	}
	if err != nil {
		f.wfInternal(w, req, rt, "enable", err)
		return
	}
	wf.Enabled = enabled
	rt.Returned(req.Context(), []tenant.CommunityID{wf.Community})
	apijson.Write(w, http.StatusOK, toWorkflowJSON(&wf, false))
}

// runJSON is a run as the API returns it.
type runJSON struct {
	ID             string               `json:"id"`
	Workflow       string               `json:"workflow_id"`
	Status         string               `json:"status"`
	TriggerEventID string               `json:"trigger_event_id"`
	Trigger        map[string]any       `json:"trigger"`
	CurrentStep    int                  `json:"current_step"`
	Trace          []workflow.StepTrace `json:"trace"`
	ErrorCode      string               `json:"error_code,omitempty"`
	Error          string               `json:"error,omitempty"`
	ResumeAt       *time.Time           `json:"resume_at,omitempty"`
	CreatedAt      time.Time            `json:"created_at"`
	StartedAt      *time.Time           `json:"started_at,omitempty"`
	CompletedAt    *time.Time           `json:"completed_at,omitempty"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func (f *Feature) serveWorkflowRuns(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	_, rt, wf, _, ok := f.workflowRequest(w, req, tc, "workflow_runs")
	if !ok {
		return
	}
	badPage := func() {
		rt.Refused(req.Context(), msgBadRunPage)
		apijson.Error(w, http.StatusBadRequest, "invalid", msgBadRunPage)
	}
	page := workflow.RunPage{Cursor: req.URL.Query().Get("cursor")}
	if l := req.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			badPage()
			return
		}
		page.Limit = min(n, workflow.MaxRunPage)
	}
	runs, next, err := f.store.Runs(req.Context(), tc.Community(), wf.ID, page)
	if errors.Is(err, workflow.ErrBadCursor) {
		badPage()
		return
	}
	if err != nil {
		f.wfInternal(w, req, rt, "runs", err)
		return
	}
	out := make([]runJSON, len(runs))
	rows := make([]tenant.CommunityID, len(runs))
	for i, run := range runs {
		trace := run.Trace
		if trace == nil {
			trace = []workflow.StepTrace{}
		}
		rows[i] = run.Community
		out[i] = runJSON{
			ID: run.ID.String(), Workflow: run.Workflow.String(), Status: string(run.Status),
			TriggerEventID: run.TriggerEventID, Trigger: run.Trigger, CurrentStep: run.CurrentStep,
			Trace: trace, ErrorCode: run.ErrorCode, Error: run.Error, ResumeAt: optTime(run.ResumeAt),
			CreatedAt: run.CreatedAt.UTC(), StartedAt: optTime(run.StartedAt), CompletedAt: optTime(run.CompletedAt),
		}
	}
	rt.Returned(req.Context(), rows)
	apijson.Write(w, http.StatusOK, map[string]any{"runs": out, "next_cursor": next})
}
