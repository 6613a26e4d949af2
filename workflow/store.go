package workflow

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/tenant"
)

// ID is a workflow or run UUID. It is only meaningful together with the
// community it is looked up in.
type ID [16]byte

// NewID returns a random (version 4) UUID.
func NewID() ID {
	var id ID
	_, _ = rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

// ParseID parses the canonical lowercase 8-4-4-4-12 UUID text.
func ParseID(s string) (ID, bool) {
	c, ok := channel.ParseID(s)
	return ID(c), ok
}

func (id ID) String() string { return channel.ID(id).String() }

// IsZero reports whether id is the zero UUID.
func (id ID) IsZero() bool { return id == ID{} }

// MarshalText implements encoding.TextMarshaler (the canonical UUID text).
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ID) UnmarshalText(b []byte) error {
	v, ok := ParseID(string(b))
	if !ok {
		return errors.New("workflow: not a canonical UUID")
	}
	*id = v
	return nil
}

// Workflow is a stored workflow: its current definition and who owns it.
type Workflow struct {
	Community  tenant.CommunityID
	ID         ID
	Channel    channel.ID
	Owner      string // 64 lowercase hex
	Name       string
	Definition *Definition
	Hash       [32]byte // SHA-256 of Definition.CanonicalJSON()
	// EventID is the id of the event (kind 30620) that published this
	// revision, "" when it was defined otherwise. A manual trigger (46020)
	// must name it.
	EventID   string
	Enabled   bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Revision is the value an expected-revision compares against.
func (w *Workflow) Revision() string { return RevisionOf(w.Hash) }

// PutWorkflow is a definition to store (create or replace).
type PutWorkflow struct {
	ID         ID
	Channel    channel.ID
	Owner      string
	Definition *Definition
	EventID    string
	// ExpectedRevision, when set, must equal the current revision (and
	// the workflow must exist) or the put fails with ErrRevisionConflict.
	ExpectedRevision string
}

// RunStatus is a run's state.
type RunStatus string

// The run states: pending → running → completed | failed | cancelled
// (waiting_approval belongs to the next engine issue).
const (
	RunPending         RunStatus = "pending"
	RunRunning         RunStatus = "running"
	RunWaitingApproval RunStatus = "waiting_approval"
	RunCompleted       RunStatus = "completed"
	RunFailed          RunStatus = "failed"
	RunCancelled       RunStatus = "cancelled"
)

// Terminal reports whether s is a final state.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

// StepStatus is the outcome of one step in a run's trace.
type StepStatus string

// Step outcomes.
const (
	StepCompleted StepStatus = "completed"
	StepSkipped   StepStatus = "skipped"
	StepFailed    StepStatus = "failed"
)

// StepTrace is one entry of a run's execution trace (Buzz's format plus
// timestamps and an error code).
type StepTrace struct {
	StepID     string         `json:"step_id"`
	Status     StepStatus     `json:"status"`
	Output     map[string]any `json:"output,omitempty"`
	ErrorCode  string         `json:"error_code,omitempty"`
	Error      string         `json:"error,omitempty"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
}

// Run is one execution of a workflow.
type Run struct {
	Community tenant.CommunityID
	ID        ID
	Workflow  ID
	Status    RunStatus
	// TriggerEventID is the id of the event that triggered the run; a
	// workflow runs at most once per trigger event.
	TriggerEventID string
	// Trigger holds the trigger variables (text, author, channel_id, …,
	// webhook fields), as JSON values.
	Trigger map[string]any
	// DefinitionHash is the hash of the workflow's definition when the
	// run was created (zero for runs stored before it was recorded). A
	// run is executed against that definition only: if the workflow was
	// redefined meanwhile, the run is cancelled (definition_changed).
	DefinitionHash [32]byte
	CurrentStep    int
	Trace          []StepTrace
	ErrorCode      string
	Error          string
	// ResumeAt is when a parked run (a delay step) continues; zero when
	// the run is not parked.
	ResumeAt    time.Time
	CreatedAt   time.Time
	StartedAt   time.Time // zero until running
	CompletedAt time.Time // zero until terminal
}

// NewRun is a trigger to persist as a pending run.
type NewRun struct {
	Workflow       ID
	TriggerEventID string
	Trigger        map[string]any
}

// RunUpdate is what a lease holder writes back after progress.
type RunUpdate struct {
	Status      RunStatus
	CurrentStep int
	Trace       []StepTrace
	ErrorCode   string
	Error       string
	// ResumeAt, when non-zero on a non-terminal status, parks the run: the
	// lease is released and the run is claimable again from ResumeAt on.
	ResumeAt time.Time
}

// Lease is a worker's hold on a run. Token increases with every claim, so
// a holder whose lease lapsed and was taken over can no longer write.
type Lease struct {
	Community tenant.CommunityID
	Run       ID
	Owner     string
	Token     int64
}

// Effect is the record of one external effect of a step, keyed by an
// idempotency key unique within the run.
type Effect struct {
	Key    string
	Intent []byte // what is about to be done (e.g. the signed event)
	Done   bool
	Result []byte // set once Done
}

// RunPage selects a page of a workflow's runs, newest first.
type RunPage struct {
	Cursor string // "" = from the newest; else a NextCursor from the previous page
	Limit  int    // 0 = DefaultRunPage; clamped to MaxRunPage
}

// Run listing limits.
const (
	DefaultRunPage = 100
	MaxRunPage     = 1000
)

// Store errors.
var (
	// ErrNotFound: no such workflow or run in this community (a foreign
	// id is indistinguishable from a random one).
	ErrNotFound = errors.New("workflow: not found")
	// ErrRevisionConflict: ExpectedRevision does not match the current one.
	ErrRevisionConflict = errors.New("workflow: revision conflict")
	// ErrNotOwner: the workflow exists with another owner or in another
	// channel; it is not replaced.
	ErrNotOwner = errors.New("workflow: owned by another author or channel")
	// ErrLeaseLost: the lease lapsed and the run was claimed by another
	// worker (or finished); the caller must stop working on it.
	ErrLeaseLost = errors.New("workflow: lease lost")
	// ErrBadCursor: a run page cursor that no page returned.
	ErrBadCursor = errors.New("workflow: invalid cursor")
	// ErrTooManyWorkflows: creating the workflow would exceed
	// MaxWorkflowsPerChannel or MaxWorkflowsPerOwner. The error returned
	// is a *LimitError (which matches it with errors.Is).
	ErrTooManyWorkflows = errors.New("workflow: too many workflows")
)

// Workflow caps, enforced by PutWorkflow when it creates a workflow
// (replacing one does not count again). Every stored workflow counts,
// enabled or not. They bound the work one channel's workflows can make
// for each of its events (see MaxTriggerCost) and what one author can
// make a community store.
const (
	// MaxWorkflowsPerChannel is the most workflows one channel may have.
	MaxWorkflowsPerChannel = 50
	// MaxWorkflowsPerOwner is the most workflows one author may own in a
	// community, over all its channels.
	MaxWorkflowsPerOwner = 100
)

// LimitError is the ErrTooManyWorkflows of a put: which cap was reached.
type LimitError struct {
	// PerChannel: the channel's cap (MaxWorkflowsPerChannel); otherwise
	// the owner's (MaxWorkflowsPerOwner).
	PerChannel bool
	Max        int
}

func (e *LimitError) Error() string {
	if e.PerChannel {
		return fmt.Sprintf("a channel may have at most %d workflows", e.Max)
	}
	return fmt.Sprintf("an author may own at most %d workflows in a community", e.Max)
}

// Is makes a LimitError match ErrTooManyWorkflows.
func (e *LimitError) Is(target error) bool { return target == ErrTooManyWorkflows }

// Store is what the engine needs from storage. Every method taking a
// community is scoped by it; ClaimRuns alone looks across communities
// (it returns ids only). Implementations: store/postgres, store/embedded;
// workflowtest.Run pins the semantics.
type Store interface {
	// PutWorkflow creates or replaces a workflow. A replacement must come
	// from the same owner in the same channel (else ErrNotOwner). With
	// ExpectedRevision set, the workflow must exist with that revision
	// (else ErrRevisionConflict; ErrNotFound when it does not exist). The
	// enabled flag is set from the definition's "enabled" (default true)
	// on every put. Creating a workflow when its channel already has
	// MaxWorkflowsPerChannel, or its owner MaxWorkflowsPerOwner in the
	// community, fails with a *LimitError naming the cap (decided in the
	// transaction that would insert it: concurrent puts cannot exceed a
	// cap); a replacement is never refused by the caps.
	PutWorkflow(ctx context.Context, c tenant.CommunityID, p PutWorkflow) (Workflow, error)
	// Workflow returns one workflow, or ErrNotFound.
	Workflow(ctx context.Context, c tenant.CommunityID, id ID) (Workflow, error)
	// Workflows lists a channel's workflows, by id.
	Workflows(ctx context.Context, c tenant.CommunityID, channel channel.ID) ([]Workflow, error)
	// ActiveWorkflows lists the enabled workflows of a channel whose
	// trigger is on.
	ActiveWorkflows(ctx context.Context, c tenant.CommunityID, channel channel.ID, on TriggerKind) ([]Workflow, error)
	// DeleteWorkflow removes a workflow and its runs (ErrNotFound if none).
	DeleteWorkflow(ctx context.Context, c tenant.CommunityID, id ID) error
	// SetWorkflowEnabled enables or disables one workflow.
	SetWorkflowEnabled(ctx context.Context, c tenant.CommunityID, id ID, enabled bool) error
	// DisableOwnerWorkflows disables every workflow owner has in channel
	// and returns how many were enabled.
	DisableOwnerWorkflows(ctx context.Context, c tenant.CommunityID, channel channel.ID, owner string) (int64, error)

	// CreateRun persists a pending run, claimable at once, recording the
	// workflow's current definition hash (atomically). A second run
	// for the same (workflow, trigger event) is not created: the existing
	// run is returned with created false. ErrNotFound if the workflow does
	// not exist.
	CreateRun(ctx context.Context, c tenant.CommunityID, r NewRun) (run Run, created bool, err error)
	// Run returns one run, or ErrNotFound.
	Run(ctx context.Context, c tenant.CommunityID, id ID) (Run, error)
	// Runs lists a workflow's runs newest first, with the cursor of the
	// next page ("" when this is the last).
	Runs(ctx context.Context, c tenant.CommunityID, workflow ID, p RunPage) (runs []Run, next string, err error)

	// ClaimRuns leases up to max claimable runs of any community to
	// owner for ttl: runs not terminal, due (ResumeAt passed), and not
	// leased or with a lapsed lease. Each claim increments the token.
	ClaimRuns(ctx context.Context, owner string, ttl time.Duration, max int) ([]Lease, error)
	// RenewLease extends a held lease to ttl from now, or ErrLeaseLost.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) error
	// UpdateRun writes progress under a held lease (ErrLeaseLost if not
	// held). A terminal status ends the lease and the run is never
	// claimed again; a ResumeAt parks it (lease released); otherwise the
	// lease is kept.
	UpdateRun(ctx context.Context, l Lease, u RunUpdate) error
	// ReleaseRun gives a held lease up without changing the run, so the
	// run is claimable at once (used when shutting down).
	ReleaseRun(ctx context.Context, l Lease) error

	// BeginEffect records the intent of effect key of the leased run
	// (ErrLeaseLost if the lease is not held) unless a record exists, and
	// returns the record as stored; created is false when it existed (an
	// earlier attempt began, and maybe finished, this effect).
	BeginEffect(ctx context.Context, l Lease, key string, intent []byte) (e Effect, created bool, err error)
	// FinishEffect marks effect key done with its result.
	FinishEffect(ctx context.Context, l Lease, key string, result []byte) error

	// ScheduleStore: schedule triggers' next fire times and fire claims.
	ScheduleStore
}

// MarshalTrace and UnmarshalTrace are the stored form of a trace (a JSON
// array), shared by the store implementations.
func MarshalTrace(t []StepTrace) ([]byte, error) {
	if t == nil {
		t = []StepTrace{}
	}
	return json.Marshal(t)
}

// UnmarshalTrace decodes a stored trace.
func UnmarshalTrace(b []byte) ([]StepTrace, error) {
	var t []StepTrace
	if len(b) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	return t, nil
}
