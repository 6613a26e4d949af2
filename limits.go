package buzz

import (
	"errors"
	"fmt"
	"time"
)

// Limits bounds what one client may ask of the relay. Every limit a NIP-11
// document advertises is read from the same Limits value the relay enforces.
//
// A zero field takes its default from DefaultLimits; a negative value is an
// error at New.
type Limits struct {
	// MaxFrameBytes is the largest WebSocket message accepted (NIP-11
	// max_message_length). A larger one gets a NOTICE "error: frame too large
	// (limit N bytes)" and the connection is closed with code 1009.
	MaxFrameBytes int
	// MaxSubscriptions is the number of open subscriptions per connection
	// (NIP-11 max_subscriptions).
	MaxSubscriptions int
	// MaxFilters is the number of filters per REQ or COUNT (NIP-11 max_filters).
	MaxFilters int
	// MaxSubIDLength is the longest subscription id, in bytes (NIP-11
	// max_subid_length).
	MaxSubIDLength int
	// MaxLimit clamps every filter's limit, and is the limit applied when a
	// filter gives none (NIP-11 max_limit and default_limit).
	MaxLimit int
	// MaxContentBytes is the largest event content, in bytes (NIP-11
	// max_content_length).
	MaxContentBytes int
	// MaxFutureSkew is how far ahead of the relay's clock created_at may be
	// (NIP-11 created_at_upper_limit, in seconds).
	MaxFutureSkew time.Duration
	// AuthWindow is how far an AUTH event's created_at may be from now, in
	// either direction.
	AuthWindow time.Duration
	// SendQueue is the number of outbound messages buffered per connection.
	// A live event that finds the queue full disconnects the connection
	// (close code 1008): one slow reader never stalls fan-out to the others.
	SendQueue int
	// WriteTimeout bounds one WebSocket write.
	WriteTimeout time.Duration
	// PingInterval is the keepalive period; PongTimeout is how long after a
	// ping the pong may arrive before the connection is considered dead.
	PingInterval time.Duration
	PongTimeout  time.Duration
	// EventConcurrency is how many EVENTs of one connection are processed at
	// once (pipelined clients get throughput; OKs may then arrive out of
	// order, each carrying its event id).
	EventConcurrency int
	// QueryConcurrency bounds concurrent REQ/COUNT queries per connection;
	// RelayQueryConcurrency bounds them relay-wide.
	QueryConcurrency      int
	RelayQueryConcurrency int
	// ExpirySweepInterval is the period of the NIP-40 sweeper that deletes
	// expired events from the store.
	ExpirySweepInterval time.Duration
}

// DefaultLimits returns the limits used for every zero field of a Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxFrameBytes:         512 << 10,
		MaxSubscriptions:      1024,
		MaxFilters:            10,
		MaxSubIDLength:        256,
		MaxLimit:              1000,
		MaxContentBytes:       256 << 10,
		MaxFutureSkew:         15 * time.Minute,
		AuthWindow:            60 * time.Second,
		SendQueue:             1000,
		WriteTimeout:          10 * time.Second,
		PingInterval:          30 * time.Second,
		PongTimeout:           60 * time.Second,
		EventConcurrency:      8,
		QueryConcurrency:      4,
		RelayQueryConcurrency: 256,
		ExpirySweepInterval:   time.Minute,
	}
}

// withDefaults validates l and fills its zero fields from DefaultLimits.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	var errs []error
	fillInt := func(name string, v *int, def int) {
		switch {
		case *v < 0:
			errs = append(errs, fmt.Errorf("buzz: Limits.%s must not be negative", name))
		case *v == 0:
			*v = def
		}
	}
	fillDur := func(name string, v *time.Duration, def time.Duration) {
		switch {
		case *v < 0:
			errs = append(errs, fmt.Errorf("buzz: Limits.%s must not be negative", name))
		case *v == 0:
			*v = def
		}
	}
	fillInt("MaxFrameBytes", &l.MaxFrameBytes, d.MaxFrameBytes)
	fillInt("MaxSubscriptions", &l.MaxSubscriptions, d.MaxSubscriptions)
	fillInt("MaxFilters", &l.MaxFilters, d.MaxFilters)
	fillInt("MaxSubIDLength", &l.MaxSubIDLength, d.MaxSubIDLength)
	fillInt("MaxLimit", &l.MaxLimit, d.MaxLimit)
	fillInt("MaxContentBytes", &l.MaxContentBytes, d.MaxContentBytes)
	fillDur("MaxFutureSkew", &l.MaxFutureSkew, d.MaxFutureSkew)
	fillDur("AuthWindow", &l.AuthWindow, d.AuthWindow)
	fillInt("SendQueue", &l.SendQueue, d.SendQueue)
	fillDur("WriteTimeout", &l.WriteTimeout, d.WriteTimeout)
	fillDur("PingInterval", &l.PingInterval, d.PingInterval)
	fillDur("PongTimeout", &l.PongTimeout, d.PongTimeout)
	fillInt("EventConcurrency", &l.EventConcurrency, d.EventConcurrency)
	fillInt("QueryConcurrency", &l.QueryConcurrency, d.QueryConcurrency)
	fillInt("RelayQueryConcurrency", &l.RelayQueryConcurrency, d.RelayQueryConcurrency)
	fillDur("ExpirySweepInterval", &l.ExpirySweepInterval, d.ExpirySweepInterval)
	if l.MaxFrameBytes > 0 && l.MaxFrameBytes < 1024 {
		errs = append(errs, errors.New("buzz: Limits.MaxFrameBytes must be at least 1024"))
	}
	if l.MaxFutureSkew > 0 && l.MaxFutureSkew < time.Second {
		errs = append(errs, errors.New("buzz: Limits.MaxFutureSkew must be at least 1s"))
	}
	if l.AuthWindow > 0 && l.AuthWindow < time.Second {
		errs = append(errs, errors.New("buzz: Limits.AuthWindow must be at least 1s"))
	}
	return l, errors.Join(errs...)
}
