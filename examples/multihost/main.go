// Command multihost is one relay process serving several communities, each
// selected by the HTTP Host it is reached on, with the operator API through
// which operators provision more while it runs.
//
//	OPERATOR_PUBKEY=<64 hex> go run ./examples/multihost
//
// serves ws://a.localhost:3000 and ws://b.localhost:3000 (two communities
// that never see each other's events) and, signed by the operator key with
// NIP-98 for the origin http://localhost:3000, the operator API:
//
//	POST http://localhost:3000/operator/communities {"host":"c.localhost:3000"}
//
// after which ws://c.localhost:3000 is a third community. Stop it with
// SIGINT or SIGTERM.
//
// Like every example, it imports public packages only (no internal
// package), as an embedder would.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/operator"
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
	op := os.Getenv("OPERATOR_PUBKEY")
	log.Print("relay listening on ws://a.localhost:3000 and ws://b.localhost:3000")
	if err := run(ctx, ln, "./buzz-data", op, []string{"a.localhost:3000", "b.localhost:3000"}); err != nil {
		log.Fatal(err)
	}
}

// run serves hosts (each its own community) and the operator API for
// operatorKey on ln until ctx ends. The API's origin is http://<ln's
// address>.
func run(ctx context.Context, ln net.Listener, dataDir, operatorKey string, hosts []string) error {
	defer ln.Close()
	st, err := embedded.Open(ctx, dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, h := range hosts {
		if _, _, err := st.EnsureCommunity(ctx, h); err != nil {
			return fmt.Errorf("community %s: %w", h, err)
		}
	}
	dir, err := tenant.NewCachingDirectory(st)
	if err != nil {
		return err
	}
	relay, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(dir), buzz.WithChannels())
	if err != nil {
		return err
	}
	v, err := nip98.NewVerifier()
	if err != nil {
		return err
	}
	// The operator API answers on every host under /operator/; the rest goes
	// to the relay. Provisioning tells the directory (and, through the
	// relay's control bus, every process) to forget cached hosts; archiving
	// disconnects the community's sockets.
	var ops []operator.Option
	if operatorKey != "" { // else the API is disabled: /operator/ answers 404
		ops = append(ops, operator.WithOperators(operatorKey))
	}
	api, err := operator.New(append(ops,
		operator.WithAPIOrigin("http://"+ln.Addr().String()),
		operator.WithStore(st),
		operator.WithSettingsStore(st),
		operator.WithVerifier(v),
		operator.WithDisconnector(relay),
		operator.WithHostInvalidator(dir.Invalidate),
		operator.WithControlPublisher(relay),
	)...)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: api.Wrap(relay), ReadHeaderTimeout: 10 * time.Second}
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
	err = errors.Join(relay.Shutdown(sctx), srv.Shutdown(sctx))
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
