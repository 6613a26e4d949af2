package ingest

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/buzzrelay/buzz/store"
)

// MsgFeedbackDisabled refuses product feedback on a relay that keeps none.
const MsgFeedbackDisabled = "restricted: this relay does not keep product feedback"

// queueFeedback records a kind 42000 event (product feedback) for the
// operator (Config.Feedback), after every admission check of an ordinary
// event (size, rate, policies, community access). It is never stored as an
// event nor published: no REQ, COUNT, search or subscription of any
// community returns it. A repeat is OK true "duplicate:".
func (p *Pipeline) queueFeedback(ctx context.Context, s Submission) Outcome {
	if p.cfg.Feedback == nil {
		return Outcome{Message: MsgFeedbackDisabled}
	}
	ev := s.Event
	tags := []byte("[]")
	if len(ev.Tags) > 0 {
		b, err := json.Marshal(ev.Tags)
		if err != nil {
			return Outcome{Message: "invalid: unreadable tags"}
		}
		tags = b
	}
	err := p.cfg.Feedback.AddFeedback(ctx, store.Feedback{
		Community: s.Tenant.Community(), Host: s.Tenant.Host(), ID: ev.ID, PubKey: ev.PubKey,
		Content: ev.Content, Tags: tags, CreatedAt: ev.CreatedAt,
	})
	switch {
	case err == nil:
		return Outcome{OK: true}
	case errors.Is(err, store.ErrDuplicate):
		return Outcome{OK: true, Message: MsgDuplicate}
	}
	p.cfg.Logger.ErrorContext(ctx, "ingest: product feedback", "community", s.Tenant.Community().String(), "err", err)
	return Outcome{Message: MsgInternal}
}
