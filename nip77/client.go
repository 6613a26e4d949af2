package nip77

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// Client is the client side of one reconciliation: it holds the local set
// and, message by message, learns which ids only it has (Have) and which
// only the relay has (Need). Not safe for concurrent use.
type Client struct {
	neg  *negentropy.Negentropy
	stop chan struct{}
	wg   sync.WaitGroup
	have []string
	need []string
	done bool
}

// NewClient returns the client side over items (the local set) with
// messages of at most frameBytes bytes of binary (see FrameBytes). Call
// Start, then Step with each NEG-MSG the relay answers, until done; then
// Close.
func NewClient(items []Item, frameBytes int) (*Client, error) {
	if frameBytes < MinFrameBytes {
		return nil, fmt.Errorf("nip77: frame size limit %d is below %d", frameBytes, MinFrameBytes)
	}
	v, err := newVector(items)
	if err != nil {
		return nil, err
	}
	c := &Client{neg: negentropy.New(v, frameBytes), stop: make(chan struct{})}
	// The library reports ids on two channels while a message is read:
	// drain them as they come (they are closed once reconciliation ends).
	drain := func(ch <-chan string, into *[]string) {
		defer c.wg.Done()
		for {
			select {
			case id, ok := <-ch:
				if !ok {
					return
				}
				*into = append(*into, id)
			case <-c.stop:
				return
			}
		}
	}
	c.wg.Add(2)
	go drain(c.neg.Haves, &c.have)
	go drain(c.neg.HaveNots, &c.need)
	return c, nil
}

// Start returns the initial message (hex) for NEG-OPEN.
func (c *Client) Start() string { return c.neg.Start() }

// Step reads the relay's message (hex) and returns the next message to
// send, or done when the sets are reconciled (Have and Need are then
// final).
func (c *Client) Step(msg string) (next string, done bool, err error) {
	if c.done {
		return "", true, nil
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = errors.New("nip77: the relay's negentropy message could not be read")
			}
		}()
		next, err = c.neg.Reconcile(msg)
	}()
	if err != nil {
		return "", false, fmt.Errorf("nip77: %w", err)
	}
	if next == "" {
		c.done = true
		c.wg.Wait() // the channels are closed: every id is collected
		return "", true, nil
	}
	return next, false, nil
}

// Close releases the client; Have and Need stay readable.
func (c *Client) Close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.wg.Wait()
}

// Have returns the ids only the local set holds, sorted, each once. Final
// once Step reported done.
func (c *Client) Have() []string { return sortedSet(c.have) }

// Need returns the ids only the relay's set holds, sorted, each once.
func (c *Client) Need() []string { return sortedSet(c.need) }

func sortedSet(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// Transport carries one connection's messages: Send writes one message;
// Recv returns the next one received (any message: the caller picks out
// its own).
type Transport interface {
	Send(ctx context.Context, msg []byte) error
	Recv(ctx context.Context) ([]byte, error)
}

// Stats are the figures of one reconciliation.
type Stats struct {
	// RoundTrips is the number of messages sent: NEG-OPEN and each NEG-MSG.
	RoundTrips int
	// BytesSent and BytesReceived count the NEG-* messages' bytes.
	BytesSent, BytesReceived int64
}

// Result is what a reconciliation found.
type Result struct {
	Have  []string // ids only the local set holds
	Need  []string // ids only the relay holds
	Stats Stats
}

// RelayError is a NEG-ERR the relay answered with.
type RelayError struct{ Reason string }

func (e *RelayError) Error() string { return "nip77: the relay refused: " + e.Reason }

// Reconcile runs one reconciliation of items (the local set) with the
// relay's set for filter (its JSON object) over t, as subscription subID,
// and closes it (NEG-CLOSE) at the end. Messages on t that are not this
// subscription's NEG-MSG or NEG-ERR are skipped (onOther, when not nil,
// sees them). A NEG-ERR is returned as a *RelayError.
func Reconcile(ctx context.Context, t Transport, subID string, filter []byte, items []Item, frameBytes int, onOther func([]byte)) (Result, error) {
	var res Result
	c, err := NewClient(items, frameBytes)
	if err != nil {
		return res, err
	}
	defer c.Close()
	send := func(m []byte) error {
		res.Stats.RoundTrips++
		res.Stats.BytesSent += int64(len(m))
		return t.Send(ctx, m)
	}
	if err := send(AppendOpen(nil, subID, filter, c.Start())); err != nil {
		return res, err
	}
	for {
		data, err := t.Recv(ctx)
		if err != nil {
			return res, err
		}
		m, ok := ParseRelayMessage(data)
		if !ok {
			if onOther != nil {
				onOther(data)
			}
			continue
		}
		switch m := m.(type) {
		case *Err:
			if m.SubID != subID {
				continue
			}
			res.Stats.BytesReceived += int64(len(data))
			return res, &RelayError{Reason: m.Reason}
		case *Msg:
			if m.SubID != subID {
				continue
			}
			res.Stats.BytesReceived += int64(len(data))
			next, done, err := c.Step(m.Message)
			if err != nil {
				return res, err
			}
			if done {
				res.Have, res.Need = c.Have(), c.Need()
				_ = t.Send(ctx, AppendClose(nil, subID))
				return res, nil
			}
			if err := send(AppendMsg(nil, subID, next)); err != nil {
				return res, err
			}
		}
	}
}
