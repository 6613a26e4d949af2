package buzz

import (
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/nostr"
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
	// MaxFilters is the number of filters per REQ or COUNT (NIP-11
	// max_filters). Filters are counted while the message is parsed: a REQ
	// with one more is refused before the rest is read.
	MaxFilters int
	// MaxFilterValues is the number of values one filter field may list:
	// ids, authors, kinds, and each tag ("#e", "#p", …) separately (NIP-11
	// limitation.max_filter_values). More gets CLOSED "invalid: too many
	// values in <field> (limit N)".
	MaxFilterValues int
	// MaxSubscriptionBytes bounds the filters of one REQ or COUNT, in bytes
	// of JSON (NIP-11 limitation.max_subscription_bytes): CLOSED "invalid:
	// filters too large (limit N bytes)".
	MaxSubscriptionBytes int
	// MaxConnFilterBytes bounds the filters of all the open subscriptions
	// of one connection together (NIP-11
	// limitation.max_connection_filter_bytes): each REQ is charged its size
	// in bytes plus 64 per value its filters list, about what a value
	// costs in memory once parsed and indexed. A REQ that would exceed it
	// gets CLOSED "restricted: ...". With SendQueueBytes it bounds what a
	// connection holds (see Limits.SendQueueBytes).
	MaxConnFilterBytes int
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
	// MaxGroupEventAge is how far behind the relay's clock the created_at
	// of an event published into a NIP-29 group (h tag: messages and group
	// commands) may be: NIP-29 asks relays to refuse late publication, so
	// events copied from other relays cannot be replayed into a group's
	// past.
	MaxGroupEventAge time.Duration
	// AuthWindow is how far an AUTH event's created_at may be from now, in
	// either direction.
	AuthWindow time.Duration
	// SendQueue is the number of outbound messages buffered per connection.
	// A live event that finds the queue full disconnects the connection
	// (close code 1008): one slow reader never stalls fan-out to the others.
	SendQueue int
	// SendQueueBytes bounds the bytes of those messages, and separately the
	// bytes of the live events held back while a subscription replays. A
	// connection's memory is therefore bounded by about
	// 2×SendQueueBytes + 8×MaxConnFilterBytes (parsed filters and their
	// index entries) plus one message being read (MaxFrameBytes) and one
	// page of stored events per running query (≤ 1 MiB each, at most
	// QueryConcurrency of them). Exceeding the bound on live delivery closes
	// the connection (1008); replies wait for room instead.
	SendQueueBytes int
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
	// QueryConcurrency bounds concurrent REQ/COUNT queries per connection.
	QueryConcurrency int
	// RelayQueryConcurrency bounds store reads running at once relay-wide.
	// Zero takes the store's own read concurrency when it reports one
	// (ReadConcurrency: 3 of the embedded store's 4 readers, the PostgreSQL
	// pool less its committers and two — the rest serve EVENTs' lookups) and
	// 16 otherwise: more would only queue inside the
	// store, where no one is fair. Reads beyond it wait in a queue served in
	// turn across communities, then across connections.
	RelayQueryConcurrency int
	// CommunityQueryShare is how many of the RelayQueryConcurrency slots one
	// community may hold at once (default: three quarters of them, at least
	// one), so that the others always find a slot.
	CommunityQueryShare int
	// QueryTimeout is the deadline of one store read (a page of a REQ's
	// stored events, or a COUNT). A read that exceeds it is cancelled in the
	// store and its subscription gets CLOSED "error: query took too long".
	QueryTimeout time.Duration
	// MessageRate is how many messages per second one connection may send,
	// with bursts of MessageBurst. A message beyond it is refused with
	// "rate-limited: ..." (OK false, CLOSED or NOTICE) and not processed.
	MessageRate  int
	MessageBurst int
	// MaxConnections bounds open WebSocket connections relay-wide (HTTP 503
	// on upgrade beyond it); MaxConnectionsPerAddress bounds them per client
	// address (HTTP 429), the address being the one Relay.ClientAddr
	// reports (see WithTrustedProxies); MaxCommunityConnections, when not
	// zero, bounds them per community (HTTP 503), so one community cannot
	// take every connection of a shared relay.
	MaxConnections           int
	MaxConnectionsPerAddress int
	MaxCommunityConnections  int
	// MaxNegentropyItems bounds the set one NIP-77 reconciliation
	// (NEG-OPEN) runs over: the events its filter matches that the client
	// may read. A larger set gets NEG-ERR "blocked: too many events to
	// reconcile (limit N); narrow the filter". The relay holds about 100
	// bytes per item while the session is open.
	MaxNegentropyItems int
	// MaxNegentropySessions is the number of NIP-77 sessions one connection
	// may have open at once (NEG-ERR "blocked: ..." beyond).
	MaxNegentropySessions int
	// ExpirySweepInterval is the period of the NIP-40 sweeper that deletes
	// expired events from the store.
	ExpirySweepInterval time.Duration
	// MaxNotBeforeDelta bounds how far ahead of now a NIP-ER reminder's
	// "not_before" may be (Buzz: one year); NIP-11 advertises it as
	// limitation.max_not_before_delta.
	MaxNotBeforeDelta time.Duration
	// ReminderSweepInterval is the period of the sweeper that tells
	// authors' subscriptions of their reminders falling due (reminders.go).
	ReminderSweepInterval time.Duration
	// MaxReposPerPubKey is how many git repository names (kind 30617 d
	// values) one owner may hold in a community (Buzz: 100); a new name
	// beyond it is refused "invalid: repository quota exceeded".
	MaxReposPerPubKey int
}

// filterLimits is the bound on the filters of one read, the same for a
// REQ or COUNT on a WebSocket and for the body of POST /query or /count:
// MaxFilters, MaxFilterValues and MaxSubscriptionBytes.
func (l Limits) filterLimits() nostr.FilterLimits {
	return nostr.FilterLimits{
		MaxFilters: l.MaxFilters,
		MaxValues:  l.MaxFilterValues,
		MaxBytes:   l.MaxSubscriptionBytes,
	}
}

// DefaultLimits returns the limits used for every zero field of a Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxFrameBytes:            512 << 10,
		MaxSubscriptions:         1024,
		MaxFilters:               10,
		MaxFilterValues:          1000,
		MaxSubscriptionBytes:     128 << 10,
		MaxConnFilterBytes:       1 << 20,
		MaxSubIDLength:           256,
		MaxLimit:                 1000,
		MaxContentBytes:          256 << 10,
		MaxFutureSkew:            15 * time.Minute,
		MaxGroupEventAge:         time.Hour,
		AuthWindow:               60 * time.Second,
		SendQueue:                1000,
		SendQueueBytes:           8 << 20,
		WriteTimeout:             10 * time.Second,
		PingInterval:             30 * time.Second,
		PongTimeout:              60 * time.Second,
		EventConcurrency:         8,
		QueryConcurrency:         4,
		QueryTimeout:             10 * time.Second,
		MessageRate:              1000,
		MessageBurst:             2000,
		MaxConnections:           10000,
		MaxConnectionsPerAddress: 256,
		MaxNegentropyItems:       500_000,
		MaxNegentropySessions:    2,
		ExpirySweepInterval:      time.Minute,
		MaxNotBeforeDelta:        365 * 24 * time.Hour,
		ReminderSweepInterval:    time.Second,
		MaxReposPerPubKey:        100,
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
	fillInt("MaxFilterValues", &l.MaxFilterValues, d.MaxFilterValues)
	fillInt("MaxSubscriptionBytes", &l.MaxSubscriptionBytes, d.MaxSubscriptionBytes)
	fillInt("MaxConnFilterBytes", &l.MaxConnFilterBytes, d.MaxConnFilterBytes)
	fillInt("MaxSubIDLength", &l.MaxSubIDLength, d.MaxSubIDLength)
	fillInt("MaxLimit", &l.MaxLimit, d.MaxLimit)
	fillInt("MaxContentBytes", &l.MaxContentBytes, d.MaxContentBytes)
	fillDur("MaxFutureSkew", &l.MaxFutureSkew, d.MaxFutureSkew)
	fillDur("MaxGroupEventAge", &l.MaxGroupEventAge, d.MaxGroupEventAge)
	fillDur("AuthWindow", &l.AuthWindow, d.AuthWindow)
	fillInt("SendQueue", &l.SendQueue, d.SendQueue)
	fillInt("SendQueueBytes", &l.SendQueueBytes, d.SendQueueBytes)
	fillDur("WriteTimeout", &l.WriteTimeout, d.WriteTimeout)
	fillDur("PingInterval", &l.PingInterval, d.PingInterval)
	fillDur("PongTimeout", &l.PongTimeout, d.PongTimeout)
	fillInt("EventConcurrency", &l.EventConcurrency, d.EventConcurrency)
	fillInt("QueryConcurrency", &l.QueryConcurrency, d.QueryConcurrency)
	fillInt("RelayQueryConcurrency", &l.RelayQueryConcurrency, d.RelayQueryConcurrency)
	fillInt("CommunityQueryShare", &l.CommunityQueryShare, d.CommunityQueryShare)
	fillDur("QueryTimeout", &l.QueryTimeout, d.QueryTimeout)
	fillInt("MessageRate", &l.MessageRate, d.MessageRate)
	fillInt("MessageBurst", &l.MessageBurst, d.MessageBurst)
	fillInt("MaxConnections", &l.MaxConnections, d.MaxConnections)
	fillInt("MaxConnectionsPerAddress", &l.MaxConnectionsPerAddress, d.MaxConnectionsPerAddress)
	fillInt("MaxCommunityConnections", &l.MaxCommunityConnections, d.MaxCommunityConnections)
	fillInt("MaxNegentropyItems", &l.MaxNegentropyItems, d.MaxNegentropyItems)
	fillInt("MaxNegentropySessions", &l.MaxNegentropySessions, d.MaxNegentropySessions)
	fillDur("ExpirySweepInterval", &l.ExpirySweepInterval, d.ExpirySweepInterval)
	fillDur("MaxNotBeforeDelta", &l.MaxNotBeforeDelta, d.MaxNotBeforeDelta)
	fillDur("ReminderSweepInterval", &l.ReminderSweepInterval, d.ReminderSweepInterval)
	fillInt("MaxReposPerPubKey", &l.MaxReposPerPubKey, d.MaxReposPerPubKey)
	if l.MaxFrameBytes > 0 && l.MaxFrameBytes < 1024 {
		errs = append(errs, errors.New("buzz: Limits.MaxFrameBytes must be at least 1024"))
	}
	if l.MaxConnFilterBytes < l.MaxSubscriptionBytes {
		errs = append(errs, errors.New("buzz: Limits.MaxConnFilterBytes must be at least MaxSubscriptionBytes"))
	}
	if l.MaxFutureSkew > 0 && l.MaxFutureSkew < time.Second {
		errs = append(errs, errors.New("buzz: Limits.MaxFutureSkew must be at least 1s"))
	}
	if l.MaxGroupEventAge > 0 && l.MaxGroupEventAge < time.Second {
		errs = append(errs, errors.New("buzz: Limits.MaxGroupEventAge must be at least 1s"))
	}
	if l.AuthWindow > 0 && l.AuthWindow < time.Second {
		errs = append(errs, errors.New("buzz: Limits.AuthWindow must be at least 1s"))
	}
	return l, errors.Join(errs...)
}
