package store

import (
	"context"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// Feedback is one product-feedback event (kind 42000) as the relay
// received it: kept for the operator only, never as a community's event.
type Feedback struct {
	Community  tenant.CommunityID
	Host       string // the community host the client sent it to
	ID         string // event id
	PubKey     string // author
	Content    string
	Tags       []byte // the event's tags, JSON
	CreatedAt  int64
	ReceivedAt time.Time // set by the store
}

// MaxFeedbackPage is the largest page FeedbackStore.RecentFeedback returns.
const MaxFeedbackPage = 500

// FeedbackStore keeps product feedback in one operator-wide table, out of
// every community's events: no read of events (REQ, COUNT, search, live
// delivery) can return it. Both backends implement it.
type FeedbackStore interface {
	// AddFeedback records f (ReceivedAt is set by the store). A second
	// feedback with the same event id is ErrDuplicate.
	AddFeedback(ctx context.Context, f Feedback) error
	// RecentFeedback returns the newest feedback of every community, newest
	// received first, at most limit (1..MaxFeedbackPage; out of range is
	// MaxFeedbackPage): the operator's view.
	RecentFeedback(ctx context.Context, limit int) ([]Feedback, error)
}

// FeedbackPage bounds a requested page size to 1..MaxFeedbackPage.
func FeedbackPage(limit int) int {
	if limit <= 0 || limit > MaxFeedbackPage {
		return MaxFeedbackPage
	}
	return limit
}
