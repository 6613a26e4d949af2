package buzz

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"slices"

	"github.com/buzzrelay/buzz/tenant"
)

// Conn is a read-only view of the client a hook runs for: the WebSocket
// connection, or the NIP-98-authenticated request of the HTTP API. Get it
// with ConnFrom in EventPolicy, FilterPolicy, OnConnect, OnDisconnect and
// OnAuth hooks. The zero Conn has no address and no pubkeys.
type Conn struct {
	ws      *conn      // nil for an HTTP API request or before the upgrade
	addr    netip.Addr // Relay.ClientAddr of the request
	pubkeys []string   // the NIP-98 signer of an HTTP API request
	viaHTTP bool       // an HTTP API request
	subID   string
}

type connKey struct{}

type subIDKey struct{}

// ConnFrom returns the client a hook's ctx belongs to; ok is false for a
// context the relay did not give to a hook (and, for example, in OnStored
// hooks of events that arrived from another process).
func ConnFrom(ctx context.Context) (Conn, bool) {
	v, ok := ctx.Value(connKey{}).(Conn)
	if !ok {
		return Conn{}, false
	}
	if id, ok := ctx.Value(subIDKey{}).(string); ok {
		v.subID = id
	}
	return v, true
}

func withConn(ctx context.Context, v Conn) context.Context {
	return context.WithValue(ctx, connKey{}, v)
}

// withSubID adds the subscription id a FilterPolicy runs for.
// httpConn is the view of an HTTP API request signed by pubkey.
func (r *Relay) httpConn(ctx context.Context, req *http.Request, pubkey string) context.Context {
	return withConn(ctx, Conn{addr: r.ClientAddr(req), pubkeys: []string{pubkey}, viaHTTP: true})
}

func withSubID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, subIDKey{}, id)
}

// RemoteAddr is the client's address as Relay.ClientAddr sees it: the
// peer, or the address a trusted proxy (WithTrustedProxies) forwarded.
func (v Conn) RemoteAddr() netip.Addr { return v.addr }

// Pubkeys returns the pubkeys the client has authenticated as, in order:
// with NIP-42 on a WebSocket connection (as of the call: a later AUTH
// adds to them), the NIP-98 signer on an HTTP API request. The caller owns
// the slice.
func (v Conn) Pubkeys() []string {
	if v.ws != nil {
		return v.ws.readers()
	}
	return slices.Clone(v.pubkeys)
}

// IsAuthed reports whether the client has authenticated as pubkey.
func (v Conn) IsAuthed(pubkey string) bool {
	if v.ws != nil {
		return v.ws.isAuthed(pubkey)
	}
	return slices.Contains(v.pubkeys, pubkey)
}

// SubscriptionID is the REQ or COUNT subscription id a FilterPolicy runs
// for; "" in every other hook and on the HTTP API.
func (v Conn) SubscriptionID() string { return v.subID }

// WebSocket reports whether the client is a WebSocket connection (false
// for the HTTP API).
func (v Conn) WebSocket() bool { return !v.viaHTTP }

// OnConnect is an embedder's hook run for each WebSocket upgrade request
// bound to a community, before the upgrade (ConnFrom gives its remote
// address; nothing is authenticated yet). A non-nil error refuses the
// upgrade with HTTP 403 and the error text, prefixed as for EventPolicy
// (default "blocked: ").
type OnConnect = func(ctx context.Context, tc tenant.TenantContext) error

// OnDisconnect is an embedder's hook run once each WebSocket connection has
// closed, after its last reply. ConnFrom gives what the connection was
// (its pubkeys as last authenticated); ctx is not cancelled.
type OnDisconnect = func(ctx context.Context, tc tenant.TenantContext)

// OnAuth is an embedder's hook run when a NIP-42 AUTH event has passed the
// relay's checks, before pubkey is added to the connection (ConnFrom lists
// the pubkeys authenticated before). A non-nil error refuses it with OK
// false and the error text, prefixed as for EventPolicy (default
// "restricted: ").
type OnAuth = func(ctx context.Context, tc tenant.TenantContext, pubkey string) error

// WithOnConnect adds a hook run before each WebSocket upgrade. It may be
// given several times: all hooks run, in order, until one refuses.
func WithOnConnect(fn OnConnect) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("buzz: WithOnConnect: nil func")
		}
		c.onConnect = append(c.onConnect, fn)
		return nil
	}
}

// WithOnDisconnect adds a hook run after each WebSocket connection closed.
// It may be given several times; hooks run in order.
func WithOnDisconnect(fn OnDisconnect) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("buzz: WithOnDisconnect: nil func")
		}
		c.onDisconnect = append(c.onDisconnect, fn)
		return nil
	}
}

// WithOnAuth adds a hook that may refuse NIP-42 authentication. It may be
// given several times: all hooks run, in order, until one refuses.
func WithOnAuth(fn OnAuth) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("buzz: WithOnAuth: nil func")
		}
		c.onAuth = append(c.onAuth, fn)
		return nil
	}
}
