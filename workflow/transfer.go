package workflow

import "time"

// Durable state as an export carries it (package transfer): a store that
// implements the export and restore side reads and writes these. Times
// are the embedded store's precision, whole milliseconds.

// WorkflowState is a stored workflow with what a put does not carry.
type WorkflowState struct {
	Workflow
	// WebhookSecretHash is the SHA-256 of a webhook trigger's secret, nil
	// when none is set (the secret itself is never stored).
	WebhookSecretHash []byte
	// Schedule is a schedule trigger's next fire time, nil for other
	// triggers.
	Schedule *ScheduleState
}

// ScheduleState is a schedule trigger's position: the next slot to fire
// (zero: compute it at the next tick) and when the schedule was defined
// (no slot before it fires).
type ScheduleState struct {
	NextFire time.Time
	Since    time.Time
}

// RunState is a run with its recorded effects. A restored run that is not
// terminal is claimable again (its lease, if any, is not carried).
type RunState struct {
	Run
	Effects []EffectState
}

// EffectState is one recorded external effect of a run.
type EffectState struct {
	Key        string
	Intent     []byte
	Done       bool
	Result     []byte
	CreatedAt  time.Time
	FinishedAt time.Time // zero unless Done
}

// FireState is one claimed schedule slot: the slot a workflow fired (or
// is firing) at, at most once, and the run it made.
type FireState struct {
	Workflow  ID
	Slot      time.Time
	ClaimedAt time.Time
	Run       ID // zero when none was recorded
}
