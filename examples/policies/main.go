// Command policies is a relay with two rules written against the
// connection view (buzz.ConnFrom), on ws://localhost:3000:
//
//   - a read rule: direct messages (kind 4) are readable only by their
//     parties — a filter that can match kind 4 must name only pubkeys the
//     connection authenticated as (NIP-42), in "authors" or "#p";
//   - a write rule: a connection may publish only events signed by a pubkey
//     it authenticated as.
//
// Both refuse with a NIP-01 prefixed message the client sees (CLOSED or OK
// false), and the relay asks for authentication (AuthRequired is not
// needed: the rules decide).
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
	"slices"
	"syscall"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nostr"
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

// dmReadRule refuses a filter that could return direct messages of anyone
// but the connection's authenticated pubkeys.
func dmReadRule(ctx context.Context, _ tenant.TenantContext, f nostr.Filter) error {
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, nostr.KindDirectMessage) {
		return nil // cannot match a DM
	}
	conn, ok := buzz.ConnFrom(ctx)
	if !ok {
		return errors.New("restricted: direct messages need an authenticated client")
	}
	mine := func(pks []string) bool {
		if len(pks) == 0 {
			return false
		}
		for _, pk := range pks {
			if !conn.IsAuthed(pk) {
				return false
			}
		}
		return true
	}
	if mine(f.Authors) || mine(f.Tags["p"]) {
		return nil
	}
	if len(conn.Pubkeys()) == 0 {
		return errors.New("auth-required: direct messages are readable only by their parties")
	}
	return errors.New("restricted: direct messages are readable only by their parties")
}

// writeRule admits an event only from a pubkey the connection
// authenticated as.
func writeRule(ctx context.Context, _ tenant.TenantContext, ev *nostr.Event) error {
	conn, ok := buzz.ConnFrom(ctx)
	if !ok || !conn.IsAuthed(ev.PubKey) {
		return errors.New("auth-required: authenticate as the event's author")
	}
	return nil
}

// run serves the relay on ln from the store in dataDir until ctx ends.
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
	relay, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(dir),
		buzz.WithFilterPolicy(dmReadRule),
		buzz.WithEventPolicy(writeRule))
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
	err = errors.Join(relay.Shutdown(sctx), srv.Shutdown(sctx))
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
