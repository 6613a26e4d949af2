// Command cluster is one process of a relay that runs as several: every
// process shares one PostgreSQL database (events, communities, the relay
// key) and one Redis (live events, control messages such as revocations
// and host changes, presence), so a client connected to any process sees
// what was published on any other, at once.
//
// Run two processes in two terminals (PostgreSQL and Redis on their
// default local ports):
//
//	export DATABASE_URL=postgres://postgres@127.0.0.1:5432/buzz_cluster REDIS_URL=redis://127.0.0.1:6379
//	createdb -h 127.0.0.1 -U postgres buzz_cluster
//	LISTEN=localhost:3001 go run ./examples/cluster
//	LISTEN=localhost:3002 go run ./examples/cluster
//
// Both serve one community, COMMUNITY_HOST (default relay.localhost); each
// maps its own listen address onto it as a host alias, so
// ws://localhost:3001 and ws://localhost:3002 are the same community (in
// production a load balancer sends one public host to every process).
// Subscribe on one and publish on the other. Stop each with SIGINT or
// SIGTERM.
//
// With OPERATOR_PUBKEY (64 hex) set, each process also serves the operator
// API (package operator) under /operator/. Archiving a community through
// either process closes its connections on both (control.Disconnector),
// and neither binds a new connection to it while its host cache may still
// map the host; NIP-98 replays are refused across processes. Package
// cluster builds all of it from one Redis URL.
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
	"github.com/buzzrelay/buzz/cluster"
	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/pubsub/redis"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/tenant"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{
		databaseURL: os.Getenv("DATABASE_URL"),
		redisURL:    os.Getenv("REDIS_URL"),
		community:   envOr("COMMUNITY_HOST", "relay.localhost"),
		namespace:   envOr("REDIS_NAMESPACE", redis.DefaultNamespace),
		operator:    os.Getenv("OPERATOR_PUBKEY"),
	}
	if cfg.databaseURL == "" || cfg.redisURL == "" {
		log.Fatal("set DATABASE_URL and REDIS_URL")
	}
	ln, err := net.Listen("tcp", envOr("LISTEN", "localhost:3001"))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("relay process listening on ws://%s", ln.Addr())
	if err := run(ctx, ln, cfg); err != nil {
		log.Fatal(err)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

type config struct {
	databaseURL string
	redisURL    string
	namespace   string // Redis key namespace, shared by the processes
	community   string // the community's host
	operator    string // pubkey allowed to use the operator API; "" = API off
}

// run serves one process of the cluster on ln until ctx ends.
func run(ctx context.Context, ln net.Listener, cfg config) error {
	defer ln.Close()
	st, err := postgres.Open(ctx, cfg.databaseURL, postgres.WithAutoMigrate(true))
	if err != nil {
		return err
	}
	defer st.Close()
	id, _, err := st.EnsureCommunity(ctx, cfg.community)
	if err != nil {
		return fmt.Errorf("community %s: %w", cfg.community, err)
	}
	self, err := tenant.NormalizeHost(ln.Addr().String())
	if err != nil {
		return err
	}
	if err := st.AddHostAlias(ctx, self, id); err != nil && !errors.Is(err, store.ErrCommunityExists) {
		return fmt.Errorf("alias %s: %w", self, err)
	}
	// What the processes share through Redis: live events, the control
	// bus (revocations, bans, host changes, archives), presence, the NIP-98
	// replay guard, and the archive fence over this process's host cache,
	// which refuses a community archived on any process for as long as a
	// cache may still map its host.
	d, err := cluster.Open(ctx, st, cluster.WithRedis(cfg.redisURL), cluster.WithNamespace(cfg.namespace))
	if err != nil {
		return err
	}
	defer d.Close()
	// The relay key is the one the database keeps for the deployment: the
	// first process stores it, every other one reads it.
	relay, err := buzz.New(append(d.RelayOptions(), buzz.WithStore(st), buzz.WithChannels())...)
	if err != nil {
		return err
	}
	relay.Mux().Handle("GET "+buzz.ReadyzPath, relay.ReadyzHandler()) // the store and Redis
	handler, err := operatorAPI(cfg, ln, st, d, relay)
	if err != nil {
		_ = relay.Shutdown(ctx)
		return err
	}

	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
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

// operatorAPI wraps relay with the operator API (when cfg.operator is set),
// wired for several processes: archives disconnect every process's sockets,
// host changes reach every host cache, and NIP-98 tokens are spent once
// across processes.
func operatorAPI(cfg config, ln net.Listener, st *postgres.Store, d *cluster.Deployment, relay *buzz.Relay) (http.Handler, error) {
	if cfg.operator == "" {
		return relay, nil
	}
	v, err := d.NIP98Verifier()
	if err != nil {
		return nil, err
	}
	disconnect, err := control.NewDisconnector(relay)
	if err != nil {
		return nil, err
	}
	api, err := operator.New(
		operator.WithOperators(cfg.operator),
		operator.WithAPIOrigin("http://"+ln.Addr().String()),
		operator.WithStore(st),
		operator.WithVerifier(v),
		operator.WithDisconnector(disconnect),
		operator.WithHostInvalidator(d.InvalidateHost),
		operator.WithControlPublisher(relay),
	)
	if err != nil {
		return nil, err
	}
	return api.Wrap(relay), nil
}
