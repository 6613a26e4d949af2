package workflowhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// The workflow commands and triggers.
//
//   - Kind 30620 defines a workflow: content = YAML, d = workflow UUID,
//     h = channel, optional name and expected-revision tags. The engine
//     parses and authorizes it (its author must hold every right its
//     steps need, see rights.go: a channel member; owner or
//     admin when it calls webhooks or sets the topic; an update only by
//     the same owner in the same channel), then the event is stored like any addressable event and the
//     OK message is `response:{"workflow_id":…,"revision":…,"event_id":…}`,
//     with "webhook_secret" the first time a webhook definition of that id
//     is stored (see hooks.go).
//     Errors: `invalid: …` (the field, a stale expected-revision),
//     `restricted: …` (authority, another author's or channel's id, a
//     workflow cap reached: workflow.MaxWorkflowsPerChannel, MaxWorkflowsPerOwner).
//   - Kind 46020 runs a webhook-triggered workflow by hand: d = workflow
//     id, e = the id of its current 30620, h = channel, content a JSON
//     object whose fields become trigger variables. It is executed, never
//     stored; OK `response:{"run_id":…,"workflow_id":…,"status":…}`.
//   - A NIP-09 deletion of the coordinate 30620:<owner>:<id> deletes the
//     workflow with its runs.
//   - Stored kind 9 messages and kind 7 reactions of a channel are matched
//     against its workflows before the OK is sent: a run is persisted for
//     each match (a failure is retried in the background by the engine's
//     event loop, see engineSide.Subscribe). The matching of one event
//     is bounded in total (workflow.MaxTriggerCost, one shared 100 ms
//     deadline), so a channel's workflows delay an OK by a few ms at most.
//   - Workflow status events (46001–46012) are relay-signed: clients cannot
//     publish them.
//   - Removing a member from a channel (9001, 9022) disables the workflows
//     they own there. Whatever else changes an owner's rights (a ban, a
//     timeout, a removal from a members-only community, a demotion) stops
//     their workflows at the next run or step (rights.go).
//
// Every lookup is scoped by the connection's community: a workflow id of
// another community is answered exactly like a random one.

// Messages of the workflow commands.
const (
	msgWorkflowUnknown    = "invalid: unknown workflow"
	msgWorkflowBadD       = "invalid: d tag must be a workflow UUID (lowercase 8-4-4-4-12)"
	msgWorkflowNoH        = "invalid: workflow events need an h tag naming their channel"
	msgWorkflowStale      = "invalid: expected-revision does not match the workflow's current revision"
	msgWorkflowNotOwner   = "restricted: this workflow id belongs to another author or channel"
	msgWorkflowNotAllowed = "restricted: only channel members may define workflows, and only owners and admins ones that call webhooks or set the topic"
	msgWorkflowStatus     = "restricted: workflow status events are relay-signed"
	msgManualStale        = "invalid: e tag must name the workflow's current definition event"
	msgManualWrongTrigger = "invalid: only workflows triggered by webhook can be run by hand"
	msgManualDisabled     = "restricted: the workflow is disabled"
	msgManualNotMember    = "restricted: only channel members may run workflows"
	msgManualOwner        = "restricted: the workflow's owner may not run it now"
	msgManualContent      = "invalid: content must be empty or a JSON object"
)

// Approvals (request_approval): a run waiting for a human decision is
// granted by kind 46030 and denied by kind 46031, each with d = the
// approval id (the SHA-256 of the token, lowercase hex) and h = the
// workflow's channel. They are executed, never stored. The signer must be
// the named approver, or any member of the channel for "any". The OK is
// `response:{"approval_id":…,"status":"granted"|"denied"}`; a request
// decided meanwhile (another approver won), expired, unknown, or of
// another community or channel is refused with the same message, so the
// answer reveals nothing about approvals the signer may not decide.

const (
	msgApprovalUnknown    = "invalid: unknown, expired or already decided approval"
	msgApprovalNotAllowed = "restricted: you are not an approver of this request"
)

type retryEvent struct {
	c  tenant.CommunityID
	ev *nostr.Event
}

// maxRetry bounds the triggers kept for retry while the store fails.
const maxRetry = 100_000

// publishTimeout bounds one Publish.
const publishTimeout = 10 * time.Second

// refuseStatus refuses a workflow status event (46001–46012) from a client.
func refuseStatus(context.Context, ingest.Submission) (ingest.Outcome, bool) {
	return ingest.Outcome{Message: msgWorkflowStatus}, false
}

// workflowChannel returns the channel named by ev's h tag (admission has
// already resolved it inside the community).
func workflowChannel(ev *nostr.Event) (channel.ID, bool) {
	id, ok, err := channel.OfEvent(ev)
	return id, ok && err == nil
}

// workflowTarget reads the workflow id (d) and channel (h) that 30620 and
// 46020 name; msg is the refusal when either is missing or malformed.
func workflowTarget(ev *nostr.Event) (id workflow.ID, ch channel.ID, msg string) {
	id, ok := workflow.ParseID(ev.DTag())
	if !ok {
		return id, ch, msgWorkflowBadD
	}
	if ch, ok = workflowChannel(ev); !ok {
		return id, ch, msgWorkflowNoH
	}
	return id, ch, ""
}

// define executes a 30620.
func (h *Feature) define(ctx context.Context, s ingest.Submission) (ingest.Outcome, bool) {
	ev, c := s.Event, s.Tenant.Community()
	id, ch, msg := workflowTarget(ev)
	if msg != "" {
		return ingest.Outcome{Message: msg}, false
	}
	// A 30620 is a parameterized-replaceable event: one older than the
	// coordinate's stored head would be refused by the store after Define
	// had already changed the workflow, so it is refused first (the store's
	// own check still decides a race between two versions in flight).
	if newer, err := h.newerDefinitionStored(ctx, c, ev); err != nil {
		h.h.Logger().ErrorContext(ctx, "buzz: define workflow", "community", c.String(), "err", err)
		return ingest.Outcome{Message: ingest.MsgInternal}, false
	} else if newer {
		return ingest.Outcome{Message: ingest.MsgSuperseded}, false
	}
	wf, err := h.engine.Define(ctx, c, workflow.DefineRequest{
		ID: id, Channel: ch, Author: ev.PubKey, YAML: []byte(ev.Content), EventID: ev.ID,
		ExpectedRevision: ev.Tags.Find("expected-revision").Value(),
	})
	var fe *workflow.FieldError
	switch {
	case err == nil:
	case errors.Is(err, store.ErrDuplicate): // defined by this very event before (the authority rule)
		return ingest.Outcome{OK: true, Message: ingest.MsgDuplicate}, false
	case errors.As(err, &fe):
		return ingest.Outcome{Message: "invalid: " + fe.Error()}, false
	case errors.Is(err, workflow.ErrRevisionConflict), errors.Is(err, workflow.ErrNotFound):
		return ingest.Outcome{Message: msgWorkflowStale}, false
	case errors.Is(err, workflow.ErrNotOwner):
		return ingest.Outcome{Message: msgWorkflowNotOwner}, false
	case errors.Is(err, workflow.ErrNotPermitted):
		return ingest.Outcome{Message: msgWorkflowNotAllowed}, false
	case errors.Is(err, workflow.ErrTooManyWorkflows):
		return ingest.Outcome{Message: "restricted: " + err.Error()}, false
	default:
		h.h.Logger().ErrorContext(ctx, "buzz: define workflow", "community", c.String(), "err", err)
		return ingest.Outcome{Message: ingest.MsgInternal}, false
	}
	resp := map[string]any{
		"workflow_id": wf.ID.String(), "revision": wf.Revision(), "event_id": ev.ID, "enabled": wf.Enabled,
	}
	// A webhook workflow's secret is created once and shown once (see
	// workflows_hooks.go).
	secret, created, err := h.engine.EnsureWebhookSecret(audit.WithActor(ctx, ev.PubKey), c, wf)
	if err != nil && !errors.Is(err, workflow.ErrNoWebhookSecrets) {
		h.h.Logger().ErrorContext(ctx, "buzz: webhook secret", "community", c.String(), "err", err)
		return ingest.Outcome{Message: ingest.MsgInternal}, false
	}
	if created {
		resp["webhook_secret"] = secret
	}
	return ingest.Outcome{OK: true, Message: response(resp)}, true
}

// newerDefinitionStored reports whether the store already holds a version
// of ev's coordinate (30620, author, d) that NIP-01 ranks above ev: a later
// created_at, or the same one with a lower id.
func (h *Feature) newerDefinitionStored(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) (bool, error) {
	f := nostr.Filter{Kinds: []int{ev.Kind}, Authors: []string{ev.PubKey}, Tags: map[string][]string{"d": {ev.DTag()}}, Limit: 1}
	for rec, err := range h.h.Store().Query(ctx, c, f) {
		if err != nil {
			return false, err
		}
		if rec.CreatedAt > ev.CreatedAt || (rec.CreatedAt == ev.CreatedAt && rec.ID < ev.ID) {
			return true, nil
		}
	}
	return false, nil
}

// trigger executes a 46020.
func (h *Feature) trigger(ctx context.Context, s ingest.Submission) (ingest.Outcome, bool) {
	ev, c := s.Event, s.Tenant.Community()
	id, ch, msg := workflowTarget(ev)
	if msg != "" {
		return ingest.Outcome{Message: msg}, false
	}
	fields := map[string]any{}
	if strings.TrimSpace(ev.Content) != "" {
		if err := json.Unmarshal([]byte(ev.Content), &fields); err != nil || fields == nil {
			return ingest.Outcome{Message: msgManualContent}, false
		}
	}
	run, _, err := h.engine.TriggerManual(ctx, c, workflow.ManualTrigger{
		Workflow: id, Channel: ch, Revision: ev.Tags.Find("e").Value(), Author: ev.PubKey,
		EventID: ev.ID, Fields: fields,
	})
	switch {
	case err == nil:
	case errors.Is(err, store.ErrDuplicate): // triggered by this very event before (the authority rule)
		return ingest.Outcome{OK: true, Message: ingest.MsgDuplicate}, false
	case errors.Is(err, workflow.ErrNotFound):
		return ingest.Outcome{Message: msgWorkflowUnknown}, false
	case errors.Is(err, workflow.ErrRevisionConflict):
		return ingest.Outcome{Message: msgManualStale}, false
	case errors.Is(err, workflow.ErrWrongTrigger):
		return ingest.Outcome{Message: msgManualWrongTrigger}, false
	case errors.Is(err, workflow.ErrDisabled):
		return ingest.Outcome{Message: msgManualDisabled}, false
	case errors.Is(err, workflow.ErrNotPermitted):
		return ingest.Outcome{Message: msgManualNotMember}, false
	case errors.Is(err, workflow.ErrOwnerUnauthorized):
		return ingest.Outcome{Message: msgManualOwner}, false
	default:
		h.h.Logger().ErrorContext(ctx, "buzz: manual workflow trigger", "community", c.String(), "err", err)
		return ingest.Outcome{Message: ingest.MsgInternal}, false
	}
	return ingest.Outcome{OK: true, Message: response(map[string]any{
		"run_id": run.ID.String(), "workflow_id": run.Workflow.String(), "status": string(run.Status),
	})}, false
}

// response is an OK message carrying a JSON object.
func response(v map[string]any) string {
	b, _ := json.Marshal(v)
	return "response:" + string(b)
}

// onStored feeds stored events to the workflows: triggers (messages 9 and
// 40002, reactions 7 and diffs 40008 of a channel) and deletions of 30620
// coordinates.
func (h *Feature) onStored(ctx context.Context, tc tenant.TenantContext, ev *nostr.Event) {
	switch ev.Kind {
	case nostr.KindChatMessage, messaging.KindMessage, messaging.KindReaction, messaging.KindDiff:
		if err := h.engine.HandleEvent(ctx, tc.Community(), ev); err != nil {
			h.h.Logger().WarnContext(ctx, "buzz: workflow triggers of an event failed; retrying", "event", ev.ID, "err", err)
			h.enqueue(tc.Community(), ev)
		}
	case nostr.KindDeletion:
		h.deleteDefinitions(ctx, tc.Community(), ev)
	}
}

// deleteDefinitions deletes the workflows whose 30620 coordinates the
// deletion request ev names (its author's own only).
func (h *Feature) deleteDefinitions(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) {
	prefix := strconv.Itoa(nostr.KindDefinition) + ":" + ev.PubKey + ":"
	for _, t := range ev.Tags {
		if len(t) < 2 || t[0] != "a" || !strings.HasPrefix(t[1], prefix) {
			continue
		}
		id, ok := workflow.ParseID(strings.TrimPrefix(t[1], prefix))
		if !ok {
			continue
		}
		err := h.engine.Delete(ctx, c, id, ev.PubKey)
		if err != nil && !errors.Is(err, workflow.ErrNotFound) && !errors.Is(err, workflow.ErrNotPermitted) {
			h.h.Logger().ErrorContext(ctx, "buzz: delete workflow", "community", c.String(), "workflow", id.String(), "err", err)
		}
	}
}

// onChannelChange disables, in the channel, the workflows of users who
// stopped being its members.
func (h *Feature) onChannelChange(ctx context.Context, c tenant.CommunityID, ch channel.Change) {
	for _, pk := range ch.Revoked {
		if _, err := h.engine.MemberRemoved(ctx, c, ch.Channel.ID, pk); err != nil {
			h.h.Logger().ErrorContext(ctx, "buzz: disable a removed member's workflows", "community", c.String(), "err", err)
		}
	}
}

func (h *Feature) enqueue(c tenant.CommunityID, ev *nostr.Event) {
	h.mu.Lock()
	if len(h.retry) >= maxRetry {
		h.mu.Unlock()
		h.h.Logger().Error("buzz: workflow trigger retry queue full; trigger dropped", "event", ev.ID)
		return
	}
	h.retry = append(h.retry, retryEvent{c, ev})
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Subscribe implements workflow.EventSource. Stored events are matched as
// they are stored (before their OK); Subscribe delivers again, in order,
// those whose matching failed, until deliver succeeds for each.
func (h *engineSide) Subscribe(ctx context.Context, deliver func(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error) error {
	for {
		h.mu.Lock()
		var next *retryEvent
		if len(h.retry) > 0 {
			next = &h.retry[0]
		}
		h.mu.Unlock()
		if next == nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-h.wake:
				continue
			}
		}
		if err := deliver(ctx, next.c, next.ev); err != nil {
			return err // the supervisor restarts Subscribe after a backoff
		}
		h.mu.Lock()
		h.retry = h.retry[1:]
		h.mu.Unlock()
	}
}

// Sign implements workflow.Publisher with community c's relay key.
func (h *engineSide) Sign(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	if err := h.groupTag(ctx, c, ev); err != nil {
		return err
	}
	return h.h.Sign(c, ev)
}

// groupTag writes the channel's NIP-29 group id into ev's h tag. The engine
// names a channel by its key, a UUID; a group created with a name for an id
// ("pizza-lovers") is known to clients, and to admission, by that name.
// Like Publish, it outlives a cancelled run context (bounded by
// publishTimeout): the last status event of a run is signed as it ends.
func (h *engineSide) groupTag(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	id, has, err := channel.OfEvent(ev)
	if err != nil || !has {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	ch, err := h.channels.Channel(ctx, c, id)
	if err != nil {
		return fmt.Errorf("workflowhost: sign workflow event in channel %s: %w", id, err)
	}
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "h" {
			t[1] = ch.GroupID()
		}
	}
	return nil
}

// Publish implements workflow.Publisher: ev is stored in community c (an
// event of a channel only when c holds the channel) and delivered live by
// the relay (buzz.Host.Publish); an event already stored is not an error
// and not delivered again.
//
// A publish, once begun, is not abandoned when ctx is cancelled (the
// engine cancels a run's context as the run ends, while its last status
// event may still be on its way): it runs detached, bounded by
// publishTimeout.
func (h *engineSide) Publish(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	if ch, has, err := channel.OfEvent(ev); err != nil {
		return err
	} else if has {
		if _, err := h.channels.Channel(ctx, c, ch); err != nil {
			return fmt.Errorf("workflowhost: publish into channel %s: %w", ch, err)
		}
	}
	return h.h.Publish(ctx, c, ev)
}

// SetChannelTopic implements workflow.TopicSetter: the topic is the
// channel's about; after a change the relay-signed 39000 is republished.
func (h *engineSide) SetChannelTopic(ctx context.Context, c tenant.CommunityID, id channel.ID, topic string) error {
	if h.topics == nil {
		return errors.New("workflowhost: the store cannot set channel topics")
	}
	ch, changed, err := h.topics.SetChannelTopic(ctx, c, id, topic)
	if err != nil || !changed {
		return err
	}
	h.h.PublishChannelState(ctx, c, channel.Change{Channel: ch, Metadata: true})
	return nil
}

// SealDM implements workflow.DMSealer: a NIP-17 message from community c's
// relay key, gift-wrapped to the recipient (gift wraps are p-gated: only the
// recipient reads them).
func (h *engineSide) SealDM(_ context.Context, c tenant.CommunityID, to, text string) ([]*nostr.Event, error) {
	wrap, err := h.h.SealDM(c, to, text)
	if err != nil {
		return nil, err
	}
	return []*nostr.Event{wrap}, nil
}

// decide executes a 46030 (grant) or 46031 (deny).
func (h *Feature) decide(ctx context.Context, s ingest.Submission) (ingest.Outcome, bool) {
	ev, c := s.Event, s.Tenant.Community()
	ch, ok := workflowChannel(ev)
	if !ok {
		return ingest.Outcome{Message: msgWorkflowNoH}, false
	}
	ap, err := h.engine.Decide(ctx, c, ch, ev.DTag(), ev.Kind == nostr.KindApprovalGrant, ev.PubKey)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrDuplicate): // decided by this very event before (the authority rule)
		return ingest.Outcome{OK: true, Message: ingest.MsgDuplicate}, false
	case errors.Is(err, workflow.ErrNotFound), errors.Is(err, workflow.ErrApprovalClosed):
		return ingest.Outcome{Message: msgApprovalUnknown}, false
	case errors.Is(err, workflow.ErrApprovalNotAllowed):
		return ingest.Outcome{Message: msgApprovalNotAllowed}, false
	default:
		h.h.Logger().ErrorContext(ctx, "buzz: approval decision", "community", c.String(), "err", err)
		return ingest.Outcome{Message: ingest.MsgInternal}, false
	}
	return ingest.Outcome{OK: true, Message: response(map[string]any{
		"approval_id": ap.ID(), "status": string(ap.Status), "run_id": ap.Run.String(),
	})}, false
}

// ApprovalURL implements workflow.ApprovalLinker: the approval page on the
// community's primary host.
func (h *engineSide) ApprovalURL(ctx context.Context, c tenant.CommunityID, token string) (string, error) {
	origin, err := h.h.CommunityOrigin(ctx, c)
	if err != nil {
		return "", fmt.Errorf("workflowhost: approval link: %w", err)
	}
	return origin + ApprovalsPath + "/" + token, nil
}
