// Command frontend is a buzz feature written by an embedder: an HTTP +
// Server-Sent Events timeline that mounts on a buzz.Relay
// (buzz.WithFeature) beside the relay's own WebSocket handler, as the
// features that ship with buzz do. Its routes are mounted through the
// relay's seam (buzz.Host.HandleCommunity) on every community host; it
// writes through the relay's ingest path (Host.Submit) and reads through
// the relay's subscriptions (Host.Subscribe), so its clients get the
// relay's isolation, admission, channel rules, moderation and revocation —
// on every process of a deployment with a control bus — without the
// feature re-implementing any of it. It serves http://localhost:3000 from
// ./buzz-data until SIGINT or SIGTERM:
//
//	POST /events                  one signed event (JSON body), admitted by the
//	                              relay's ingest pipeline → {"event_id",
//	                              "accepted", "message"}, message being the
//	                              relay's OK message
//	GET  /timeline?filter=<JSON>  the stored events of one NIP-01 filter,
//	                              newest first, as a JSON array
//	GET  /stream?filter=<JSON>    text/event-stream: the stored events
//	                              ("event: event"), then "event: eose", then
//	                              live events; "event: closed" with the
//	                              relay's reason when access is revoked
//
// A request may carry "Authorization: Nostr <base64 kind 27235 event>"
// (NIP-98, u tag http://<host><path>?<query>): it then reads (and writes) as
// the signer — private channels it is a member of, members-only
// communities it belongs to, gift wraps (kind 1059) addressed to it.
// Without one it reads what anybody may read. Refusals are {"error":
// "<prefix>", "message": "<the relay's message>"}.
//
// Communities are moderated as the relay moderates them (9040–9044): a
// banned pubkey can neither write nor read there, and its open streams
// end. Channel commands publish the relay-signed channel state (NIP-29
// 39000–39003), signed with the relay master key kept in the data
// directory. The same relay serves NIP-01 WebSocket clients on the same
// port.
//
// Like every example, it imports public packages only (no internal
// package), as an embedder would.
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/tenant"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "localhost:3000")
	if err != nil {
		log.Fatal(err)
	}
	log.Print("timeline on http://localhost:3000/timeline, stream on /stream, publish with POST /events")
	if err := run(ctx, ln, "./buzz-data"); err != nil {
		log.Fatal(err)
	}
}

// run serves the relay, with the frontend mounted, for the listener's host
// from the store in dataDir until ctx ends, then shuts the relay down
// (which ends every open stream) and the server.
func run(ctx context.Context, ln net.Listener, dataDir string) error {
	defer ln.Close()
	st, err := embedded.Open(ctx, dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	host, err := tenant.NormalizeHost(ln.Addr().String())
	if err != nil {
		return err
	}
	if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
		return err
	}
	dir, err := tenant.NewCachingDirectory(st)
	if err != nil {
		return err
	}
	fe, err := newFrontend("http")
	if err != nil {
		return err
	}
	defer fe.Close()
	// The relay keeps its master key in the store (buzzd on the same data
	// uses the same one): channel state is signed as buzzd signs it.
	relay, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(dir), buzz.WithChannels(), buzz.WithFeature(fe))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: relay, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		_ = relay.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = relay.Shutdown(sctx) // ends the streams: their handlers return
	err = errors.Join(err, srv.Shutdown(sctx))
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
