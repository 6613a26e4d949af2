// Command buzzd is the reference buzz relay server: it wires the buzz
// library to a store (embedded SQLite by default, PostgreSQL when
// DATABASE_URL is set) and serves it over HTTP and WebSocket.
//
// Run "buzzd -h" for every setting; docs/configuration.md lists the same.
//
// Package main is wiring only: the relay, the multi-pod pieces (pubsub/redis,
// pubsub/control's ArchiveFence and Disconnector, nip98/redisreplay,
// ratelimit/redislimit) and the APIs are library packages; buzzd owns
// configuration, start-up and graceful shutdown. Nothing imports it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	// Schedule triggers name IANA time zones; embedding the zone database
	// makes a definition that parsed on one machine parse on every pod,
	// including minimal container images without /usr/share/zoneinfo.
	_ "time/tzdata"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore default handling so a second one
	// kills a shutdown that takes too long.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}
