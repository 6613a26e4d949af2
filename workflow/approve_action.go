package workflow

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// DefaultApprovalTimeout is request_approval's timeout when none is given.
const DefaultApprovalTimeout = 24 * time.Hour

// ApprovalLinker builds the approval page link of a raw token (the page
// of community c's host, e.g. https://host/approvals/TOKEN).
type ApprovalLinker interface {
	ApprovalURL(ctx context.Context, c tenant.CommunityID, token string) (string, error)
}

// requestApproval: parks the run (waiting_approval) until a channel
// member (from: any) or one named pubkey grants (46030) or denies (46031)
// it, or until it expires.
type requestApproval struct {
	st    ApprovalStore
	links ApprovalLinker // nil: the 46010 and DM carry the raw token only
	dms   DMSealer       // nil: only "any" approvers
	max   time.Duration
}

// NeededRight implements RightNeeder: the request is posted into the
// channel.
func (requestApproval) NeededRight() Right { return RightPost }

func (requestApproval) Name() string { return ActionRequestApproval }

// approverSpec normalizes a from field: ApproverAny or 64 lowercase hex.
func approverSpec(from string) (string, error) {
	from = strings.TrimSpace(from)
	if from == "" || from == ApproverAny {
		return ApproverAny, nil
	}
	pk, err := nostr.ParsePubKey(from)
	if err != nil {
		return "", fmt.Errorf("must be empty, \"any\" (any channel member) or one public key (64 hex or npub); roles are not supported")
	}
	return pk, nil
}

func approvalTimeout(f Fields, max time.Duration) (time.Duration, error) {
	v, ok := f["timeout"]
	if !ok || v == nil {
		return DefaultApprovalTimeout, nil
	}
	d, err := durationField(Fields{"duration": v})
	if err != nil {
		return 0, fieldErr("timeout", "must be a duration such as 30m, 24h or a number of seconds")
	}
	if d < time.Second || d > max {
		return 0, fieldErr("timeout", "must be between 1s and %v", max)
	}
	return d, nil
}

func (a requestApproval) Validate(f Fields, _ *Definition) error {
	if err := f.Only("from", "message", "timeout"); err != nil {
		return err
	}
	from, err := f.String("from", false)
	if err != nil {
		return err
	}
	spec, err := approverSpec(from)
	if err != nil {
		return fieldErr("from", "%v", err)
	}
	if spec != ApproverAny && a.dms == nil {
		return fieldErr("from", "a named approver needs private messages, which this relay does not send; use any")
	}
	msg, err := f.String("message", false)
	if err != nil {
		return err
	}
	if len(msg) > maxMessageBytes {
		return fieldErr("message", "must be at most %d bytes", maxMessageBytes)
	}
	_, err = approvalTimeout(f, a.max)
	return err
}

// approvalRecord is the recorded effect of a request: what identifies the
// approval and the events announcing it (published again on a takeover).
type approvalRecord struct {
	ID      string            `json:"approval_id"`
	Expires int64             `json:"expires_at"`
	Events  []json.RawMessage `json:"events"`
}

func (a requestApproval) Run(ctx context.Context, x *StepContext) (map[string]any, error) {
	from, _ := x.Step.Fields.String("from", false)
	spec, err := approverSpec(from)
	if err != nil {
		return nil, Fail(CodeInvalidDefinition, "from: %v", err)
	}
	timeout, err := approvalTimeout(x.Step.Fields, a.max)
	if err != nil {
		return nil, Fail(CodeInvalidDefinition, "%v", err)
	}
	msg, _ := x.String("message")
	raw, err := x.Once(ctx, "request", nil, true, func(ctx context.Context, intent []byte) ([]byte, error) {
		var rec approvalRecord
		if len(intent) > 0 {
			if err := json.Unmarshal(intent, &rec); err != nil {
				return nil, fmt.Errorf("recorded approval: %w", err)
			}
		} else if rec, err = a.prepare(ctx, x, spec, msg, timeout); err != nil {
			return nil, err
		}
		if err := a.announce(ctx, x, spec, msg, rec); err != nil {
			return nil, err
		}
		return json.Marshal(approvalRecord{ID: rec.ID, Expires: rec.Expires})
	})
	if err != nil {
		return nil, err
	}
	var rec approvalRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("recorded approval: %w", err)
	}
	var hash [32]byte
	if b, err := hex.DecodeString(rec.ID); err != nil || len(b) != 32 {
		return nil, fmt.Errorf("recorded approval id %q", rec.ID)
	} else {
		copy(hash[:], b)
	}
	ap, err := a.st.Approval(ctx, x.Community, hash)
	if err != nil {
		return nil, err
	}
	if ap.Status == ApprovalPending && !x.Now().Before(ap.ExpiresAt) {
		ap, err = a.st.DecideApproval(ctx, x.Community, hash, Decision{Status: ApprovalExpired, At: x.Now()})
		if errors.Is(err, ErrApprovalClosed) {
			ap, err = a.st.Approval(ctx, x.Community, hash)
		}
		if err != nil {
			return nil, err
		}
	}
	switch ap.Status {
	case ApprovalPending:
		return nil, x.WaitForApproval(ap.ExpiresAt)
	case ApprovalGranted:
		if _, err := a.outcome(ctx, x, nostr.KindApprovalGranted, ap); err != nil {
			return nil, err
		}
		return map[string]any{"approved": true, "approver": ap.DecidedBy, "approval_id": ap.ID()}, nil
	case ApprovalDenied:
		if _, err := a.outcome(ctx, x, nostr.KindApprovalDenied, ap); err != nil {
			return nil, err
		}
		return nil, x.Cancel(CodeApprovalDenied, "the approval was denied by %s", ap.DecidedBy)
	default:
		return nil, Fail(CodeApprovalExpired, "the approval expired at %s without a decision", ap.ExpiresAt.UTC().Format(time.RFC3339))
	}
}

// prepare creates the token and the approval, and signs (or seals) the
// events announcing it. Only the token's hash is stored; the raw token is
// in the 46010 for "any", else only in the approver's sealed DM.
func (a requestApproval) prepare(ctx context.Context, x *StepContext, spec, msg string, timeout time.Duration) (approvalRecord, error) {
	token, hash := NewApprovalToken()
	expires := x.Now().Add(timeout).Truncate(time.Millisecond)
	ap := Approval{TokenHash: hash, Workflow: x.Workflow.ID, Run: x.Run.ID, StepID: x.Step.ID,
		StepIndex: x.Run.CurrentStep, Approver: spec, Message: msg, Status: ApprovalPending, ExpiresAt: expires}
	if err := a.st.CreateApproval(ctx, x.Community, ap); err != nil {
		return approvalRecord{}, err
	}
	rec := approvalRecord{ID: ap.ID(), Expires: expires.Unix()}
	link := token
	if a.links != nil {
		u, err := a.links.ApprovalURL(ctx, x.Community, token)
		if err != nil {
			return approvalRecord{}, err
		}
		link = u
	}
	body := map[string]any{
		"approval_id": ap.ID(), "workflow_id": x.Workflow.ID.String(), "run_id": x.Run.ID.String(),
		"step_id": x.Step.ID, "message": msg, "expires_at": expires.Unix(), "approver": spec,
	}
	if spec == ApproverAny {
		body["token"], body["url"] = token, link
	}
	content, _ := json.Marshal(body)
	ev := &nostr.Event{CreatedAt: x.Now().Unix(), Kind: nostr.KindApprovalRequested, Content: string(content),
		Tags: nostr.Tags{{"h", x.Workflow.Channel.String()}, {"d", ap.ID()},
			{ProvenanceTag, x.Workflow.ID.String(), x.Run.ID.String(), x.Step.ID}}}
	if err := x.e.pub.Sign(ctx, x.Community, ev); err != nil {
		return approvalRecord{}, fmt.Errorf("sign: %w", err)
	}
	rec.Events = append(rec.Events, ev.AppendJSON(nil))
	if spec != ApproverAny {
		text := fmt.Sprintf("Approval requested by workflow %q (step %s): %s\nApprove or deny: %s\nExpires %s.",
			x.Workflow.Name, x.Step.ID, msg, link, expires.UTC().Format(time.RFC3339))
		sealed, err := a.dms.SealDM(ctx, x.Community, spec, text)
		if err != nil {
			return approvalRecord{}, err
		}
		for _, s := range sealed {
			rec.Events = append(rec.Events, s.AppendJSON(nil))
		}
	}
	return rec, nil
}

// announce publishes the recorded events (again, on a takeover).
func (a requestApproval) announce(ctx context.Context, x *StepContext, spec, msg string, rec approvalRecord) error {
	for _, r := range rec.Events {
		ev, err := nostr.ParseEvent(r)
		if err != nil {
			return fmt.Errorf("recorded event: %w", err)
		}
		if err := x.e.emit(ctx, x.Community, ev); err != nil {
			return err
		}
	}
	return nil
}

// outcome publishes the 46011/46012 of a decided approval, once.
func (a requestApproval) outcome(ctx context.Context, x *StepContext, kind int, ap Approval) (string, error) {
	content, _ := json.Marshal(map[string]any{
		"approval_id": ap.ID(), "workflow_id": x.Workflow.ID.String(), "run_id": x.Run.ID.String(),
		"step_id": x.Step.ID, "status": string(ap.Status), "approver": ap.DecidedBy,
	})
	ev := &nostr.Event{CreatedAt: x.Now().Unix(), Kind: kind, Content: string(content),
		Tags: nostr.Tags{{"h", x.Workflow.Channel.String()}, {"d", ap.ID()}, {"p", ap.DecidedBy}}}
	return publishOnce(ctx, x, "outcome", ev)
}

// Approval errors of Decide.
var (
	// ErrApprovalNotAllowed: the signer does not satisfy the approver spec.
	ErrApprovalNotAllowed = errors.New("workflow: not an approver of this request")
)

// ApprovalView is what the approval page shows of an approval.
type ApprovalView struct {
	Approval
	WorkflowName string
	Channel      channel.ID
	Requester    string // the workflow's owner
}

// ApprovalByToken returns the approval of a raw token in community c
// (ErrNotFound for an unknown token, another community's, or when the
// engine has no approval store).
func (e *Engine) ApprovalByToken(ctx context.Context, c tenant.CommunityID, token string) (ApprovalView, error) {
	if e.cfg.approvals == nil || token == "" || len(token) > 256 {
		return ApprovalView{}, ErrNotFound
	}
	return e.approvalView(ctx, c, HashApprovalToken(token))
}

func (e *Engine) approvalView(ctx context.Context, c tenant.CommunityID, hash [32]byte) (ApprovalView, error) {
	ap, err := e.cfg.approvals.Approval(ctx, c, hash)
	if err != nil {
		return ApprovalView{}, err
	}
	v := ApprovalView{Approval: ap}
	if wf, err := e.store.Workflow(ctx, c, ap.Workflow); err == nil {
		v.WorkflowName, v.Channel, v.Requester = wf.Name, wf.Channel, wf.Owner
	} else if !errors.Is(err, ErrNotFound) {
		return ApprovalView{}, err
	}
	return v, nil
}

// Decide applies a grant (46030) or deny (46031) of approval id (the token
// hash hex) in channel ch by signer. The approval must exist in c (else
// ErrNotFound, also for another channel's), be pending and not expired
// (else ErrApprovalClosed: of two racing approvers one gets this), and
// signer must satisfy its spec (else ErrApprovalNotAllowed). The run
// resumes (grant) or is cancelled (deny) by the engine's workers.
func (e *Engine) Decide(ctx context.Context, c tenant.CommunityID, ch channel.ID, id string, grant bool, signer string) (Approval, error) {
	if e.cfg.approvals == nil {
		return Approval{}, ErrNotFound
	}
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 32 || strings.ToLower(id) != id {
		return Approval{}, ErrNotFound
	}
	var hash [32]byte
	copy(hash[:], b)
	v, err := e.approvalView(ctx, c, hash)
	if err != nil {
		return Approval{}, err
	}
	if v.Channel != ch {
		return Approval{}, ErrNotFound
	}
	if v.Status != ApprovalPending || !e.now().Before(v.ExpiresAt) {
		return Approval{}, ErrApprovalClosed
	}
	if v.Approver == ApproverAny {
		if _, ok, err := e.cfg.authority.ChannelRole(ctx, c, ch, signer); err != nil {
			return Approval{}, err
		} else if !ok {
			return Approval{}, ErrApprovalNotAllowed
		}
	} else if v.Approver != signer {
		return Approval{}, ErrApprovalNotAllowed
	}
	d := Decision{Status: ApprovalDenied, Approver: signer, At: e.now()}
	if grant {
		d.Status = ApprovalGranted
	}
	ap, err := e.cfg.approvals.DecideApproval(ctx, c, hash, d)
	if err != nil {
		return Approval{}, err
	}
	e.poke()
	return ap, nil
}
