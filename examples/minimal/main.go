// Command minimal is the smallest complete buzz relay: the embedded store in
// ./buzz-data, one community for localhost:3000, served on
// ws://localhost:3000 until SIGINT or SIGTERM.
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
	log.Print("relay listening on ws://localhost:3000")
	if err := run(ctx, ln, "./buzz-data"); err != nil {
		log.Fatal(err)
	}
}

// run serves a relay for the listener's host from the store in dataDir
// until ctx ends, then shuts it down gracefully.
func run(ctx context.Context, ln net.Listener, dataDir string) error {
	defer ln.Close()
	st, err := embedded.Open(ctx, dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	// Map the host clients connect with to a community (idempotent).
	host, err := tenant.NormalizeHost(ln.Addr().String())
	if err != nil {
		return err
	}
	if _, _, err := st.EnsureCommunity(ctx, host); err != nil {
		return err
	}
	// Host → community lookups are cached in front of the store.
	dir, err := tenant.NewCachingDirectory(st)
	if err != nil {
		return err
	}
	// The relay's master key is the one kept in the data directory
	// (created on first start): channel state keeps its signer across
	// restarts.
	relay, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(dir), buzz.WithChannels())
	if err != nil {
		return err
	}
	relay.Mux().Handle("GET "+buzz.HealthzPath, relay.HealthzHandler())
	relay.Mux().Handle("GET "+buzz.ReadyzPath, relay.ReadyzHandler())

	srv := &http.Server{Handler: relay, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		_ = relay.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	// Close every socket with 1012 after its pending replies, then stop
	// the HTTP server.
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = errors.Join(relay.Shutdown(sctx), srv.Shutdown(sctx))
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
