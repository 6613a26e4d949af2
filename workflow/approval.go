package workflow

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/tenant"
)

// Error codes of request_approval.
const (
	CodeApprovalDenied  = "approval_denied"
	CodeApprovalExpired = "expired"
)

// ApproverAny is the approver spec of "any member of the channel".
const ApproverAny = "any"

// ApprovalStatus is an approval's state: pending until granted, denied or
// expired (each final).
type ApprovalStatus string

// Approval states.
const (
	ApprovalPending ApprovalStatus = "pending"
	ApprovalGranted ApprovalStatus = "granted"
	ApprovalDenied  ApprovalStatus = "denied"
	ApprovalExpired ApprovalStatus = "expired"
)

// Approval is one request_approval of a run. It is found by the SHA-256
// of its token (the raw token is never stored); its hex is the approval
// id of the 46010/46030/46031 events.
type Approval struct {
	Community tenant.CommunityID
	TokenHash [32]byte
	Workflow  ID
	Run       ID
	StepID    string
	StepIndex int
	// Approver is ApproverAny or the approver's pubkey (64 lowercase hex).
	Approver  string
	Message   string
	Status    ApprovalStatus
	DecidedBy string // the approver's pubkey once granted or denied
	ExpiresAt time.Time
	CreatedAt time.Time
	DecidedAt time.Time // zero while pending
}

// ID is the approval id: the token hash in lowercase hex.
func (a *Approval) ID() string { return hex.EncodeToString(a.TokenHash[:]) }

// Decision closes a pending approval.
type Decision struct {
	Status   ApprovalStatus // granted, denied or expired
	Approver string         // the deciding pubkey ("" for expired)
	At       time.Time
}

// ErrApprovalClosed: the approval is no longer pending (decided by
// someone else, or expired).
var ErrApprovalClosed = errors.New("workflow: approval is no longer pending")

// ApprovalStore keeps approvals. Both store backends implement it beside
// Store; workflowtest.Run pins the semantics. Every method is scoped by
// the community: another community's token hash is not found.
type ApprovalStore interface {
	// CreateApproval stores a pending approval; storing one whose token
	// hash exists is a no-op (a run taken over creates it again).
	CreateApproval(ctx context.Context, c tenant.CommunityID, a Approval) error
	// Approval returns the approval with this token hash, or ErrNotFound.
	Approval(ctx context.Context, c tenant.CommunityID, tokenHash [32]byte) (Approval, error)
	// DecideApproval moves a pending approval to d.Status, only if it is
	// pending (and, for granted/denied, not expired at d.At): of two
	// concurrent decisions exactly one succeeds and the other gets
	// ErrApprovalClosed (ErrNotFound for an unknown hash). In the same
	// transaction it makes the run claimable at once and, for granted and
	// denied, appends ApprovalAudit to the community's audit chain.
	DecideApproval(ctx context.Context, c tenant.CommunityID, tokenHash [32]byte, d Decision) (Approval, error)
}

// Audit actions of approvals. Object: the approval id.
const (
	AuditApprovalGranted audit.Action = "workflow_approval_granted"
	AuditApprovalDenied  audit.Action = "workflow_approval_denied"
)

// ApprovalAudit is the audit record of a granted or denied approval (nil
// for other decisions).
func ApprovalAudit(a Approval, d Decision) *audit.Record {
	action := AuditApprovalGranted
	switch d.Status {
	case ApprovalGranted:
	case ApprovalDenied:
		action = AuditApprovalDenied
	default:
		return nil
	}
	return &audit.Record{Action: action, Actor: d.Approver, Object: a.ID(), Detail: map[string]any{
		"workflow": a.Workflow.String(), "run": a.Run.String(), "step": a.StepID,
	}}
}

// NewApprovalToken returns a random 256-bit approval token (hex) and its
// SHA-256.
func NewApprovalToken() (token string, hash [32]byte) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	token = hex.EncodeToString(b[:])
	return token, HashApprovalToken(token)
}

// HashApprovalToken is the stored form of a raw token.
func HashApprovalToken(token string) [32]byte { return sha256.Sum256([]byte(token)) }
