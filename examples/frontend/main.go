// Command frontend is a custom buzz frontend that is not the relay's
// WebSocket handler: an HTTP + Server-Sent Events timeline built from the
// public packages alone — tenant (host → community), store (events),
// channel (who may read what: the relay's read rules, revocation), pubsub
// (live events and the stored-to-live handoff), ingest (the write path),
// nip98 (who is asking) and relaykey (the relay's signing keys) — with the
// relay's isolation guarantees. It serves http://localhost:3000 from
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
// directory, as buzzd on the same data signs it.
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

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub"
	"github.com/buzzrelay/buzz/store/sqlite"
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

// run serves the frontend for the listener's host from the store in
// dataDir until ctx ends, then ends every open stream and shuts down.
func run(ctx context.Context, ln net.Listener, dataDir string) error {
	defer ln.Close()
	st, err := sqlite.Open(ctx, dataDir)
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
	// The relay master key kept with the data (buzzd keeps and uses the
	// same one): channel state is signed as the relay signs it.
	candidate, err := nostr.GenerateSecretKey()
	if err != nil {
		return err
	}
	relayKey, err := st.RelayKey(ctx, candidate)
	if err != nil {
		return err
	}
	broker, err := pubsub.NewLocal()
	if err != nil {
		return err
	}
	defer broker.Close()
	fe, err := newFrontend(Config{Store: st, Directory: dir, Broker: broker, RelayKey: relayKey, Moderation: st})
	if err != nil {
		return err
	}
	defer fe.Close()

	// Streams never go idle: they end when base does, at shutdown.
	base, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	srv := &http.Server{Handler: fe, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	endStreams()
	err = srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
