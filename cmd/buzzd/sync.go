package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nip77"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/search"
	"github.com/buzzrelay/buzz/tenant"
)

const syncUsage = `usage: buzzd sync URL [-host H] [-filter JSON] [-dir up|down|both] [store flags]

Reconciles one community of this deployment's store with the relay at URL
(ws:// or wss://) over NIP-77 negentropy, then copies what differs:
  down  events only the remote relay has are fetched (REQ by ids) and
        submitted to this store as a client's EVENTs are (ingest pipeline)
  up    events only this store has are published to the remote relay
  both  (default) both

-host H      the community, by host (default: RELAY_URL's host)
-filter JSON one NIP-01 filter both sides reconcile over (default {})
-dir D       up, down or both

This side reconciles what a reader who has not authenticated may read (the
relay's read rules: no private channel, no gift wrap); the remote relay
applies its own read rules to this client. Events fetched are checked
(id, signature) and go through the same admission rules as any client's
EVENT: authority events (group, membership and moderation commands) are
refused, as they need their author authenticated. The store is opened
as buzzd serve opens it (every buzzd setting and flag applies): stop
buzzd first with the embedded store; with PostgreSQL it runs beside it.
`

// syncOptions are sync's own flags.
type syncOptions struct {
	url    string
	host   string
	filter string
	dir    string
}

// syncFlags takes sync's own flags and the URL out of args, leaving the
// store flags.
func syncFlags(args []string) (o syncOptions, rest []string, err error) {
	o.filter, o.dir = "{}", "both"
	usage := func(format string, a ...any) error {
		return usageError{err: fmt.Errorf("sync: "+format, a...), help: "buzzd sync -h"}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			if o.url != "" {
				return o, nil, usage("one URL only (got %q and %q)", o.url, a)
			}
			o.url = a
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var dst *string
		switch name {
		case "host":
			dst = &o.host
		case "filter":
			dst = &o.filter
		case "dir":
			dst = &o.dir
		default:
			rest = append(rest, a)
			// A store flag's value follows it unless given with "=".
			if !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				rest = append(rest, args[i])
			}
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return o, nil, usage("-%s needs a value", name)
			}
			i++
			val = args[i]
		}
		*dst = val
	}
	if o.url == "" {
		return o, nil, usage("the remote relay's URL is required")
	}
	if !strings.HasPrefix(o.url, "ws://") && !strings.HasPrefix(o.url, "wss://") {
		return o, nil, usage("URL %q must start with ws:// or wss://", o.url)
	}
	if !slices.Contains([]string{"up", "down", "both"}, o.dir) {
		return o, nil, usage("-dir %q: want up, down or both", o.dir)
	}
	return o, rest, nil
}

// runSync is "buzzd sync URL [-host H] [-filter JSON] [-dir D]".
func runSync(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "help" || a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprint(stdout, syncUsage)
			return nil
		}
	}
	o, rest, err := syncFlags(args)
	if err != nil {
		return err
	}
	filters, err := nostr.ParseFiltersLimited([]byte(o.filter), nostr.FilterLimits{MaxFilters: 1})
	if err == nil {
		err = search.CheckFilters(filters)
	}
	if err != nil {
		return usageError{err: fmt.Errorf("sync: -filter: %w", err), help: "buzzd sync -h"}
	}
	filter := filters[0]
	cfg, err := parseConfig("sync", rest, lookupEnv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := newLogger(cfg, stderr)
	if o.host == "" {
		o.host = cfg.RelayHost
	}
	host, err := tenant.NormalizeHost(o.host)
	if err != nil {
		return usageError{err: fmt.Errorf("sync: -host %q: %w", o.host, err), help: "buzzd sync -h"}
	}
	backend, err := openBackend(ctx, cfg, logger, true)
	if err != nil {
		return err
	}
	defer backend.Close()
	community, err := backend.LookupHost(ctx, host)
	if errors.Is(err, tenant.ErrUnmappedHost) {
		return fmt.Errorf("sync: no community has host %q", host)
	}
	if err != nil {
		return fmt.Errorf("sync: host %q: %w", host, err)
	}
	relayKey, err := deploymentRelayKey(ctx, cfg, backend, logger)
	if err != nil {
		return err
	}
	// The local side is a relay of its own on loopback, over this store,
	// serving this tool alone: what this side reconciles and what it
	// stores go through the relay's read rules and ingest pipeline.
	lim := cfg.Limits
	lim.MessageRate, lim.MessageBurst = 1_000_000, 1_000_000
	relay, err := buzz.New(buzz.WithStore(backend), buzz.WithChannels(), buzz.WithDirectory(backend),
		buzz.WithRelayURL(cfg.RelayURL), buzz.WithLimits(lim), buzz.WithLogger(logger), buzz.WithRelayKey(relayKey))
	if err != nil {
		return fmt.Errorf("sync: relay configuration: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	srv := &http.Server{Handler: relay, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = relay.Shutdown(sctx)
		_ = srv.Shutdown(sctx)
	}()

	start := time.Now()
	items, err := relay.NegentropyItems(ctx, community, filter)
	if err != nil {
		return fmt.Errorf("sync: local set: %w", err)
	}
	remote, err := dialPeer(ctx, o.url, "")
	if err != nil {
		return fmt.Errorf("sync: %s: %w", o.url, err)
	}
	defer remote.close()
	res, err := nip77.Reconcile(ctx, remote, "buzzd-sync", filter.AppendJSON(nil), items, syncFrameBytes, func(m []byte) {
		if n, err := nostr.ParseRelayMessage(m); err == nil {
			if notice, ok := n.(*nostr.NoticeMessage); ok {
				logger.Warn("sync: the remote relay sent a NOTICE", "relay", o.url, "notice", notice.Message)
			}
		}
	})
	if err != nil {
		return fmt.Errorf("sync: reconcile with %s: %w", o.url, err)
	}
	fmt.Fprintf(stdout, "reconciled %d local events with %s in %s: %d only here, %d only there (%d round trips, %d bytes sent, %d received)\n",
		len(items), o.url, time.Since(start).Round(time.Millisecond), len(res.Have), len(res.Need),
		res.Stats.RoundTrips, res.Stats.BytesSent, res.Stats.BytesReceived)

	var local *peer
	if (o.dir != "up" && len(res.Need) > 0) || (o.dir != "down" && len(res.Have) > 0) {
		if local, err = dialPeer(ctx, "ws://"+ln.Addr().String(), host); err != nil {
			return fmt.Errorf("sync: local relay: %w", err)
		}
		defer local.close()
	}
	var failed error
	if o.dir != "up" {
		sum, err := copyEvents(ctx, remote, local, res.Need, true, logger)
		fmt.Fprintf(stdout, "down: %s\n", sum)
		failed = errors.Join(failed, err)
	}
	if o.dir != "down" {
		sum, err := copyEvents(ctx, local, remote, res.Have, false, logger)
		fmt.Fprintf(stdout, "up: %s\n", sum)
		failed = errors.Join(failed, err)
	}
	if failed != nil {
		return fmt.Errorf("sync: %w", failed)
	}
	return nil
}

// syncFrameBytes bounds the negentropy messages sync sends: small enough
// for any relay's frame limit (strfry's and khatru's accept far more).
const syncFrameBytes = 60_000

// syncBatch is how many ids one REQ fetches (a relay's per-filter value
// limit is commonly 1000 or more; buzz's default is 1000).
const syncBatch = 500

// copySummary counts what one direction did.
type copySummary struct {
	wanted, fetched, stored, duplicate, invalid int
	refused                                     map[string]int
}

func (s copySummary) String() string {
	out := fmt.Sprintf("%d to copy, %d fetched, %d stored, %d already there", s.wanted, s.fetched, s.stored, s.duplicate)
	if s.invalid > 0 {
		out += fmt.Sprintf(", %d failed their id or signature check", s.invalid)
	}
	if n := sumRefused(s.refused); n > 0 {
		reasons := make([]string, 0, len(s.refused))
		for r := range s.refused {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool { return s.refused[reasons[i]] > s.refused[reasons[j]] })
		if len(reasons) > 3 {
			reasons = reasons[:3]
		}
		for i, r := range reasons {
			reasons[i] = fmt.Sprintf("%d × %q", s.refused[r], r)
		}
		out += fmt.Sprintf(", %d refused (%s)", n, strings.Join(reasons, "; "))
	}
	return out
}

func sumRefused(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// copyEvents fetches ids from src by REQ, a batch at a time, and publishes
// each event it gets to dst, waiting for every OK. Events that fail their
// id or signature check, or that are not among the ids asked, are skipped
// (verify: for events from the remote relay; dst's relay checks again).
func copyEvents(ctx context.Context, src, dst *peer, ids []string, verify bool, logger *slog.Logger) (copySummary, error) {
	sum := copySummary{wanted: len(ids), refused: map[string]int{}}
	if len(ids) == 0 {
		return sum, nil
	}
	v, err := nostr.NewVerifier()
	if err != nil {
		return sum, err
	}
	defer v.Close()
	for b := 0; b < len(ids); b += syncBatch {
		batch := ids[b:min(b+syncBatch, len(ids))]
		asked := make(map[string]bool, len(batch))
		for _, id := range batch {
			asked[id] = true
		}
		evs, err := src.fetch(ctx, batch)
		if err != nil {
			return sum, err
		}
		var send []*nostr.Event
		for _, ev := range evs {
			if !asked[ev.ID] {
				continue
			}
			delete(asked, ev.ID)
			sum.fetched++
			if verify {
				if err := v.Verify(ev); err != nil {
					sum.invalid++
					logger.Warn("sync: event failed its check", "id", ev.ID, "err", err)
					continue
				}
			}
			send = append(send, ev)
		}
		oks, err := dst.publish(ctx, send)
		if err != nil {
			return sum, err
		}
		for _, ok := range oks {
			switch {
			case ok.OK && strings.HasPrefix(ok.Message, "duplicate:"):
				sum.duplicate++
			case ok.OK:
				sum.stored++
			default:
				sum.refused[ok.Message]++
			}
		}
	}
	return sum, nil
}

// peer is one WebSocket connection sync reads and writes in turn.
type peer struct {
	ws *websocket.Conn
}

// dialPeer connects to url (with Host header host when not "").
func dialPeer(ctx context.Context, url, host string) (*peer, error) {
	d := websocket.Dialer{HandshakeTimeout: 15 * time.Second, ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	var h http.Header
	if host != "" {
		h = http.Header{"Host": {host}}
	}
	ws, resp, err := d.DialContext(ctx, url, h)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%w (HTTP %d)", err, resp.StatusCode)
		}
		return nil, err
	}
	ws.SetReadLimit(64 << 20)
	return &peer{ws: ws}, nil
}

func (p *peer) close() { _ = p.ws.Close() }

// peerTimeout bounds the wait for any one message.
const peerTimeout = 2 * time.Minute

func (p *peer) Send(ctx context.Context, msg []byte) error {
	_ = p.ws.SetWriteDeadline(deadline(ctx))
	return p.ws.WriteMessage(websocket.TextMessage, msg)
}

func (p *peer) Recv(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_ = p.ws.SetReadDeadline(deadline(ctx))
	_, b, err := p.ws.ReadMessage()
	return b, err
}

func deadline(ctx context.Context) time.Time {
	d := time.Now().Add(peerTimeout)
	if t, ok := ctx.Deadline(); ok && t.Before(d) {
		return t
	}
	return d
}

// fetch reads the events of ids by one REQ, until EOSE.
func (p *peer) fetch(ctx context.Context, ids []string) ([]*nostr.Event, error) {
	const sub = "buzzd-sync-fetch"
	f := nostr.Filter{IDs: ids, Limit: len(ids), LimitSet: true}
	if err := p.Send(ctx, nostr.AppendReq(nil, sub, f)); err != nil {
		return nil, err
	}
	var out []*nostr.Event
	for {
		b, err := p.Recv(ctx)
		if err != nil {
			return nil, err
		}
		m, err := nostr.ParseRelayMessage(b)
		if err != nil {
			continue // a message sync does not read (NEG-*, unknown labels)
		}
		switch m := m.(type) {
		case *nostr.EventMessage:
			if m.SubID == sub {
				out = append(out, m.Event)
			}
		case *nostr.EOSEMessage:
			if m.SubID == sub {
				_ = p.Send(ctx, nostr.AppendClose(nil, sub))
				return out, nil
			}
		case *nostr.ClosedMessage:
			if m.SubID == sub {
				return nil, fmt.Errorf("REQ refused: %s", m.Message)
			}
		}
	}
}

// publish sends evs as EVENTs and returns their OKs (in any order).
func (p *peer) publish(ctx context.Context, evs []*nostr.Event) ([]*nostr.OKMessage, error) {
	pending := make(map[string]bool, len(evs))
	for _, ev := range evs {
		if err := p.Send(ctx, nostr.AppendEventEnvelope(nil, ev.AppendJSON(nil))); err != nil {
			return nil, err
		}
		pending[ev.ID] = true
	}
	var oks []*nostr.OKMessage
	for len(pending) > 0 {
		b, err := p.Recv(ctx)
		if err != nil {
			return nil, err
		}
		m, err := nostr.ParseRelayMessage(b)
		if err != nil {
			continue
		}
		if ok, isOK := m.(*nostr.OKMessage); isOK && pending[ok.EventID] {
			delete(pending, ok.EventID)
			oks = append(oks, ok)
		}
	}
	return oks, nil
}
