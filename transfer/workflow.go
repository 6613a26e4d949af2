package transfer

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// Record types of the workflow engine's durable state (format version 1:
// a reader of an older build refuses them as unknown record types).
const (
	TypeWorkflow     = "workflow"
	TypeWorkflowRun  = "workflow_run"
	TypeApproval     = "approval"
	TypeScheduleFire = "schedule_fire"
)

// TypeRelayKey is the deployment's relay master key, written only when
// ExportOptions.WithRelayKey asks for it, right after the header.
const TypeRelayKey = "relay_key"

// WorkflowSource lists a community's workflows, runs, approvals and
// claimed schedule slots.
type WorkflowSource interface {
	ExportWorkflows(ctx context.Context, c tenant.CommunityID, fn func(workflow.WorkflowState) error) error
	ExportRuns(ctx context.Context, c tenant.CommunityID, fn func(workflow.RunState) error) error
	ExportApprovals(ctx context.Context, c tenant.CommunityID, fn func(workflow.Approval) error) error
	ExportScheduleFires(ctx context.Context, c tenant.CommunityID, fn func(workflow.FireState) error) error
}

// WorkflowDestination adds workflows, runs, approvals and claimed
// schedule slots, each only when absent. A run, approval or slot whose
// workflow (or run) is not there is workflow.ErrNotFound.
type WorkflowDestination interface {
	RestoreWorkflow(ctx context.Context, c tenant.CommunityID, w workflow.WorkflowState) (bool, error)
	RestoreRun(ctx context.Context, c tenant.CommunityID, r workflow.RunState) (bool, error)
	RestoreApproval(ctx context.Context, c tenant.CommunityID, a workflow.Approval) (bool, error)
	RestoreScheduleFire(ctx context.Context, c tenant.CommunityID, f workflow.FireState) (bool, error)
}

// RelayKeyStore keeps the deployment's relay master key: RelayKey stores
// candidate when no key is stored and returns the stored key; HasRelayKey
// reports whether one is stored, changing nothing.
type RelayKeyStore interface {
	RelayKey(ctx context.Context, candidate nostr.SecretKey) (nostr.SecretKey, error)
	HasRelayKey(ctx context.Context) (bool, error)
}

// ErrRelayKeyDiffers: the export's relay key is not the one the
// destination holds; the destination's is kept.
var ErrRelayKeyDiffers = errors.New("the destination holds a different relay key")

type relayKeyJSON struct {
	Type      string `json:"type"`
	SecretKey string `json:"secret_key"`
	PubKey    string `json:"pubkey"`
}

type scheduleJSON struct {
	NextFireMS int64 `json:"next_fire_ms,omitempty"`
	SinceMS    int64 `json:"since_ms"`
}

type workflowJSON struct {
	Type              string          `json:"type"`
	Host              string          `json:"host"`
	ID                string          `json:"id"`
	Channel           string          `json:"channel"`
	Owner             string          `json:"owner"`
	Name              string          `json:"name"`
	Definition        json.RawMessage `json:"definition"`
	Hash              string          `json:"hash"`
	EventID           string          `json:"event_id,omitempty"`
	Enabled           bool            `json:"enabled"`
	CreatedMS         int64           `json:"created_ms"`
	UpdatedMS         int64           `json:"updated_ms"`
	WebhookSecretHash string          `json:"webhook_secret_hash,omitempty"`
	Schedule          *scheduleJSON   `json:"schedule,omitempty"`
}

type effectJSON struct {
	Key        string `json:"key"`
	Intent     []byte `json:"intent,omitempty"`
	Done       bool   `json:"done"`
	Result     []byte `json:"result,omitempty"`
	CreatedMS  int64  `json:"created_ms"`
	FinishedMS int64  `json:"finished_ms,omitempty"`
}

type runJSON struct {
	Type           string               `json:"type"`
	Host           string               `json:"host"`
	ID             string               `json:"id"`
	Workflow       string               `json:"workflow"`
	Status         string               `json:"status"`
	TriggerEventID string               `json:"trigger_event_id"`
	Trigger        map[string]any       `json:"trigger"`
	DefinitionHash string               `json:"definition_hash,omitempty"`
	CurrentStep    int                  `json:"current_step"`
	Trace          []workflow.StepTrace `json:"trace"`
	ErrorCode      string               `json:"error_code,omitempty"`
	Error          string               `json:"error,omitempty"`
	ResumeMS       int64                `json:"resume_ms,omitempty"`
	CreatedMS      int64                `json:"created_ms"`
	StartedMS      int64                `json:"started_ms,omitempty"`
	CompletedMS    int64                `json:"completed_ms,omitempty"`
	Effects        []effectJSON         `json:"effects"`
}

type approvalJSON struct {
	Type      string `json:"type"`
	Host      string `json:"host"`
	TokenHash string `json:"token_hash"`
	Workflow  string `json:"workflow"`
	Run       string `json:"run"`
	StepID    string `json:"step_id"`
	StepIndex int    `json:"step_index"`
	Approver  string `json:"approver"`
	Message   string `json:"message"`
	Status    string `json:"status"`
	DecidedBy string `json:"decided_by,omitempty"`
	DecidedMS int64  `json:"decided_ms,omitempty"`
	ExpiresMS int64  `json:"expires_ms"`
	CreatedMS int64  `json:"created_ms"`
}

type fireJSON struct {
	Type      string `json:"type"`
	Host      string `json:"host"`
	Workflow  string `json:"workflow"`
	SlotMS    int64  `json:"slot_ms"`
	ClaimedMS int64  `json:"claimed_ms"`
	Run       string `json:"run,omitempty"`
}

// ms is t in unix milliseconds, 0 for the zero time.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS is the time of m milliseconds, the zero time for 0.
func fromMS(m int64) time.Time {
	if m == 0 {
		return time.Time{}
	}
	return time.UnixMilli(m).UTC()
}

func hexOpt(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return hex.EncodeToString(b)
}

func idOpt(id workflow.ID) string {
	if id.IsZero() {
		return ""
	}
	return id.String()
}

// exportWorkflows writes community c's workflow records.
func (x *exporter) exportWorkflows(s WorkflowSource, h string, c tenant.CommunityID, wrap func(string, error) error) error {
	ctx := x.ctx
	if err := s.ExportWorkflows(ctx, c, func(w workflow.WorkflowState) error {
		r := workflowJSON{Type: TypeWorkflow, Host: h, ID: w.ID.String(), Channel: w.Channel.String(), Owner: w.Owner, Name: w.Name,
			Definition: w.Definition.CanonicalJSON(), Hash: hex.EncodeToString(w.Hash[:]), EventID: w.EventID, Enabled: w.Enabled,
			CreatedMS: w.CreatedAt.UnixMilli(), UpdatedMS: w.UpdatedAt.UnixMilli(), WebhookSecretHash: hexOpt(w.WebhookSecretHash)}
		if w.Schedule != nil {
			r.Schedule = &scheduleJSON{NextFireMS: ms(w.Schedule.NextFire), SinceMS: w.Schedule.Since.UnixMilli()}
		}
		return x.record(TypeWorkflow, r)
	}); err != nil {
		return wrap("workflows", err)
	}
	if err := s.ExportRuns(ctx, c, func(r workflow.RunState) error {
		rec := runJSON{Type: TypeWorkflowRun, Host: h, ID: r.ID.String(), Workflow: r.Workflow.String(), Status: string(r.Status),
			TriggerEventID: r.TriggerEventID, Trigger: r.Trigger, CurrentStep: r.CurrentStep, Trace: r.Trace, ErrorCode: r.ErrorCode,
			Error: r.Error, ResumeMS: ms(r.ResumeAt), CreatedMS: r.CreatedAt.UnixMilli(), StartedMS: ms(r.StartedAt),
			CompletedMS: ms(r.CompletedAt), Effects: []effectJSON{}}
		if r.DefinitionHash != ([32]byte{}) {
			rec.DefinitionHash = hex.EncodeToString(r.DefinitionHash[:])
		}
		if rec.Trace == nil {
			rec.Trace = []workflow.StepTrace{}
		}
		for _, e := range r.Effects {
			rec.Effects = append(rec.Effects, effectJSON{Key: e.Key, Intent: e.Intent, Done: e.Done, Result: e.Result,
				CreatedMS: e.CreatedAt.UnixMilli(), FinishedMS: ms(e.FinishedAt)})
		}
		return x.record(TypeWorkflowRun, rec)
	}); err != nil {
		return wrap("workflow runs", err)
	}
	if err := s.ExportApprovals(ctx, c, func(a workflow.Approval) error {
		return x.record(TypeApproval, approvalJSON{Type: TypeApproval, Host: h, TokenHash: hex.EncodeToString(a.TokenHash[:]),
			Workflow: a.Workflow.String(), Run: a.Run.String(), StepID: a.StepID, StepIndex: a.StepIndex, Approver: a.Approver,
			Message: a.Message, Status: string(a.Status), DecidedBy: a.DecidedBy, DecidedMS: ms(a.DecidedAt),
			ExpiresMS: a.ExpiresAt.UnixMilli(), CreatedMS: a.CreatedAt.UnixMilli()})
	}); err != nil {
		return wrap("approvals", err)
	}
	if err := s.ExportScheduleFires(ctx, c, func(f workflow.FireState) error {
		return x.record(TypeScheduleFire, fireJSON{Type: TypeScheduleFire, Host: h, Workflow: f.Workflow.String(),
			SlotMS: f.Slot.UnixMilli(), ClaimedMS: f.ClaimedAt.UnixMilli(), Run: idOpt(f.Run)})
	}); err != nil {
		return wrap("schedule fires", err)
	}
	return nil
}

func parseWID(s string) (workflow.ID, bool) {
	id, ok := workflow.ParseID(s)
	return id, ok && !id.IsZero()
}

func optHash(s string) ([32]byte, bool) {
	if s == "" {
		return [32]byte{}, true
	}
	return decodeHash(s)
}

// restoreWorkflowRecord validates and restores one workflow-state record.
func restoreWorkflowRecord(ctx context.Context, d WorkflowDestination, typ string, c tenant.CommunityID, line []byte) (bool, error) {
	bad := func(what string) (bool, error) { return false, refusal{fmt.Errorf("%s: %s", typ, what)} }
	switch typ {
	case TypeWorkflow:
		var r workflowJSON
		if err := strict(line, &r); err != nil {
			return false, refusal{err}
		}
		id, ok1 := parseWID(r.ID)
		ch, ok2 := channel.ParseID(r.Channel)
		hash, ok3 := decodeHash(r.Hash)
		if !ok1 || !ok2 || !ok3 || !isKey(r.Owner) || !optKey(r.EventID) || len(r.Definition) == 0 {
			return bad("want UUID id and channel, a 64-hex owner and hash, and a definition")
		}
		def, err := workflow.DecodeJSON(r.Definition, nil)
		if err != nil {
			return bad(fmt.Sprintf("definition: %v", err))
		}
		if def.Hash() != hash {
			return bad("hash does not match the definition")
		}
		st := workflow.WorkflowState{Workflow: workflow.Workflow{Community: c, ID: id, Channel: ch, Owner: r.Owner, Name: r.Name,
			Definition: def, Hash: hash, EventID: r.EventID, Enabled: r.Enabled, CreatedAt: fromMS(r.CreatedMS), UpdatedAt: fromMS(r.UpdatedMS)}}
		if r.WebhookSecretHash != "" {
			h, ok := decodeHash(r.WebhookSecretHash)
			if !ok {
				return bad("webhook_secret_hash: want 64 hex characters")
			}
			st.WebhookSecretHash = h[:]
		}
		if r.Schedule != nil {
			st.Schedule = &workflow.ScheduleState{NextFire: fromMS(r.Schedule.NextFireMS), Since: fromMS(r.Schedule.SinceMS)}
		}
		return d.RestoreWorkflow(ctx, c, st)
	case TypeWorkflowRun:
		var r runJSON
		if err := strict(line, &r); err != nil {
			return false, refusal{err}
		}
		id, ok1 := parseWID(r.ID)
		wf, ok2 := parseWID(r.Workflow)
		dh, ok3 := optHash(r.DefinitionHash)
		st := workflow.RunStatus(r.Status)
		switch st {
		case workflow.RunPending, workflow.RunRunning, workflow.RunWaitingApproval, workflow.RunCompleted, workflow.RunFailed, workflow.RunCancelled:
		default:
			return bad("unknown status " + fmt.Sprintf("%q", r.Status))
		}
		if !ok1 || !ok2 || !ok3 || !isKey(r.TriggerEventID) || r.CurrentStep < 0 {
			return bad("want UUID id and workflow, a 64-hex trigger_event_id and a step index")
		}
		run := workflow.RunState{Run: workflow.Run{Community: c, ID: id, Workflow: wf, Status: st, TriggerEventID: r.TriggerEventID,
			Trigger: r.Trigger, DefinitionHash: dh, CurrentStep: r.CurrentStep, Trace: r.Trace, ErrorCode: r.ErrorCode, Error: r.Error,
			ResumeAt: fromMS(r.ResumeMS), CreatedAt: fromMS(r.CreatedMS), StartedAt: fromMS(r.StartedMS), CompletedAt: fromMS(r.CompletedMS)}}
		for _, e := range r.Effects {
			if e.Key == "" || len(e.Key) > 256 {
				return bad("effect: want a key of 1 to 256 bytes")
			}
			run.Effects = append(run.Effects, workflow.EffectState{Key: e.Key, Intent: e.Intent, Done: e.Done, Result: e.Result,
				CreatedAt: fromMS(e.CreatedMS), FinishedAt: fromMS(e.FinishedMS)})
		}
		return d.RestoreRun(ctx, c, run)
	case TypeApproval:
		var r approvalJSON
		if err := strict(line, &r); err != nil {
			return false, refusal{err}
		}
		tok, ok1 := decodeHash(r.TokenHash)
		wf, ok2 := parseWID(r.Workflow)
		run, ok3 := parseWID(r.Run)
		st := workflow.ApprovalStatus(r.Status)
		if st != workflow.ApprovalPending && st != workflow.ApprovalGranted && st != workflow.ApprovalDenied && st != workflow.ApprovalExpired {
			return bad(fmt.Sprintf("unknown status %q", r.Status))
		}
		if !ok1 || !ok2 || !ok3 || !optKey(r.DecidedBy) || r.StepID == "" || r.StepIndex < 0 || (r.Approver != workflow.ApproverAny && !isKey(r.Approver)) {
			return bad("want a 64-hex token_hash, UUID workflow and run, a step, and an approver (any or a 64-hex key)")
		}
		return d.RestoreApproval(ctx, c, workflow.Approval{Community: c, TokenHash: tok, Workflow: wf, Run: run, StepID: r.StepID,
			StepIndex: r.StepIndex, Approver: r.Approver, Message: r.Message, Status: st, DecidedBy: r.DecidedBy,
			ExpiresAt: fromMS(r.ExpiresMS), CreatedAt: fromMS(r.CreatedMS), DecidedAt: fromMS(r.DecidedMS)})
	case TypeScheduleFire:
		var r fireJSON
		if err := strict(line, &r); err != nil {
			return false, refusal{err}
		}
		wf, ok := parseWID(r.Workflow)
		f := workflow.FireState{Workflow: wf, Slot: time.UnixMilli(r.SlotMS).UTC(), ClaimedAt: fromMS(r.ClaimedMS)}
		if r.Run != "" {
			var ok2 bool
			if f.Run, ok2 = parseWID(r.Run); !ok2 {
				ok = false
			}
		}
		if !ok {
			return bad("want UUID workflow and run")
		}
		return d.RestoreScheduleFire(ctx, c, f)
	}
	return false, fmt.Errorf("transfer: not a workflow record: %s", typ)
}
