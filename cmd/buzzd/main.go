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
	"runtime/debug"
	"syscall"
	// Schedule triggers name IANA time zones; embedding the zone database
	// makes a definition that parsed on one machine parse on every pod,
	// including minimal container images without /usr/share/zoneinfo.
	_ "time/tzdata"
)

// defaultGCPercent is the garbage collector's target (GOGC) when the
// environment sets none. The Go default, 100, lets the heap grow to twice
// what is live before a collection; a relay's live heap is mostly its
// caches (records, admission sketches), and the growth is the short-lived
// buffers of each message, which a collection at half that growth
// reclaims as well. Measured pinned to one core over buzzbench's ingest,
// REQ, COUNT, fan-out and idle scenarios (docs/benchmarks.md): peak RSS
// about 20 MiB lower, relay CPU per event unchanged within the run-to-run
// noise. GOGC (and GOMEMLIMIT) in the environment override it, as for any
// Go program.
const defaultGCPercent = 50

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore default handling so a second one
	// kills a shutdown that takes too long.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}
