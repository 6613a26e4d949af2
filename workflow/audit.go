package workflow

import (
	"context"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
)

// Audit actions of workflow definitions. Object: the workflow id.
const (
	AuditCreated  audit.Action = "workflow_created"
	AuditUpdated  audit.Action = "workflow_updated"
	AuditDeleted  audit.Action = "workflow_deleted"
	AuditEnabled  audit.Action = "workflow_enabled"
	AuditDisabled audit.Action = "workflow_disabled"
)

// The audit records Store implementations append, in the transaction of
// the change, for every change to a workflow definition.

// PutAudit is the record of a stored PutWorkflow (created: a new
// workflow). The actor is the workflow's owner.
func PutAudit(p PutWorkflow, created bool) audit.Record {
	action := AuditUpdated
	if created {
		action = AuditCreated
	}
	d := map[string]any{
		"channel": p.Channel.String(), "name": p.Definition.Name, "enabled": p.Definition.Enabled,
		"trigger": string(p.Definition.Trigger.On), "revision": RevisionOf(p.Definition.Hash()),
	}
	if p.EventID != "" {
		d["event"] = p.EventID
	}
	return audit.Record{Action: action, Actor: p.Owner, Object: p.ID.String(), Detail: d}
}

// DeleteAudit is the record of a deleted workflow; the actor comes from
// ctx (audit.WithActor).
func DeleteAudit(ctx context.Context, id ID) audit.Record {
	return audit.Record{Action: AuditDeleted, Actor: audit.ActorFrom(ctx), Object: id.String()}
}

// EnabledAudit is the record of SetWorkflowEnabled; the actor comes from
// ctx (audit.WithActor).
func EnabledAudit(ctx context.Context, id ID, enabled bool) audit.Record {
	action := AuditDisabled
	if enabled {
		action = AuditEnabled
	}
	return audit.Record{Action: action, Actor: audit.ActorFrom(ctx), Object: id.String()}
}

// OwnerDisabledAudit is the record of DisableOwnerWorkflows disabling n
// workflows of owner in channel ch (the owner lost the right to run them).
func OwnerDisabledAudit(ctx context.Context, ch channel.ID, owner string, n int64) audit.Record {
	return audit.Record{Action: AuditDisabled, Actor: audit.ActorFrom(ctx), Object: "",
		Detail: map[string]any{"channel": ch.String(), "owner": owner, "workflows": n, "reason": "owner lost access"}}
}
