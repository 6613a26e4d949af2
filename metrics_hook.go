package buzz

import (
	"errors"
	"iter"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Metrics receives the relay's instrumentation, each call with the
// community and host it concerns (tenant.TenantContext): one call per connection
// opened or closed, per EVENT ingested (WebSocket or HTTP), per REQ, per
// live event queued to a subscriber, per slow reader cut off, and per
// store call (op "save", "query" or "count"). Calls run on hot paths: an
// implementation must be safe for concurrent use, must not block, and
// should not allocate. *metrics.Recorder (package metrics, Prometheus) is
// one; without WithMetrics the relay records nothing.
type Metrics interface {
	ConnOpened(tc tenant.TenantContext)
	ConnClosed(tc tenant.TenantContext)
	// EventIngested: ok and msg are the OK message's flag and text;
	// stored reports that the event was written to the store.
	EventIngested(tc tenant.TenantContext, ok, stored bool, msg string)
	Req(tc tenant.TenantContext)
	LiveDelivered(tc tenant.TenantContext)
	SlowReaderDisconnected(tc tenant.TenantContext)
	StoreLatency(op string, d time.Duration)
}

// WithMetrics makes the relay report to m.
func WithMetrics(m Metrics) Option {
	return func(c *config) error {
		if m == nil {
			return errors.New("buzz: WithMetrics: nil Metrics")
		}
		c.metrics = m
		return nil
	}
}

// noMetrics is the Metrics of a relay without WithMetrics.
type noMetrics struct{}

func (noMetrics) ConnOpened(tenant.TenantContext)                        {}
func (noMetrics) ConnClosed(tenant.TenantContext)                        {}
func (noMetrics) EventIngested(tenant.TenantContext, bool, bool, string) {}
func (noMetrics) Req(tenant.TenantContext)                               {}
func (noMetrics) LiveDelivered(tenant.TenantContext)                     {}
func (noMetrics) SlowReaderDisconnected(tenant.TenantContext)            {}
func (noMetrics) StoreLatency(string, time.Duration)                     {}

// observeQuery returns seq observed as one "query" store call, timed from
// the first row asked for until the iteration ends.
func (r *Relay) observeQuery(seq iter.Seq2[store.Record, error]) iter.Seq2[store.Record, error] {
	if m, ok := r.cfg.metrics.(summaryMetrics); ok {
		if _, off := m.next.(noMetrics); off {
			return seq
		}
	}
	return func(yield func(store.Record, error) bool) {
		start := time.Now()
		defer func() { r.cfg.metrics.StoreLatency("query", time.Since(start)) }()
		for rec, err := range seq {
			if !yield(rec, err) {
				return
			}
		}
	}
}
