#!/usr/bin/env bash
# Side by side, pinned: buzzd against khatru on both backends,
# relay on core 0 and load tool on core 1, one buzzbench invocation per
# pair so both relays see the same machine. For a QUIET machine only:
# figures taken while other work runs are not comparable.
#
#   scripts/side-by-side.sh          # build, then print the commands
#   scripts/side-by-side.sh run      # build, then run them (about an hour)
#
# The peer is khatru v0.19.1 with eventstore v0.16.2 (go-nostr v0.52.3), the
# versions docs/benchmarks.md was measured with. It is never built inside this repository: the
# script writes a scratch module under $OUT/khatru-src (a main.go wiring
# khatru.NewRelay() to one event store: Save, Query, Count, Delete, Replace;
# nothing else) and builds it there. KHATRU=/path/to/binary skips that; the
# binary takes `DIR ADDR` (eventstore/badger) or `postgres://… ADDR`
# (eventstore/postgresql).
#
# Environment (defaults in brackets): OUT [/tmp/side-by-side] for the
# binaries and reports, PG [postgres://postgres@127.0.0.1:5432] for the
# server (databases buzzbench_buzzd and buzzbench_khatru are dropped and
# recreated for every run), RUNS [3], BUILDS ["buzzd buzzd-libsecp256k1"]
# (the buzzd builds to compare: buzzd is the default build, which verifies
# in pure Go, buzzd-libsecp256k1 the -tags libsecp256k1 one, which links the
# system libsecp256k1), PARTS ["embedded postgres fanout"] (the
# invocations to run: 1, 2 and 3 below).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-print}"
OUT="${OUT:-/tmp/side-by-side}"
PG="${PG:-postgres://postgres@127.0.0.1:5432}"
RUNS="${RUNS:-3}"
BUILDS="${BUILDS:-buzzd buzzd-libsecp256k1}"
PARTS="${PARTS:-embedded postgres fanout}"
want() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$OUT"
KHATRU="${KHATRU:-}"
if [ -z "$KHATRU" ]; then
	KHATRU="$OUT/khatru"
	src="$OUT/khatru-src"
	mkdir -p "$src"
	cat >"$src/main.go" <<'GO'
// Command khatru is the peer relay of buzz's side-by-side benchmark:
// khatru with one eventstore backend and nothing else.
package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/eventstore/badger"
	"github.com/fiatjaf/eventstore/postgresql"
	"github.com/fiatjaf/khatru"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: khatru DIR|DATABASE_URL ADDR")
		os.Exit(2)
	}
	var db eventstore.Store
	if strings.HasPrefix(os.Args[1], "postgres") {
		db = &postgresql.PostgresBackend{DatabaseURL: os.Args[1]}
	} else {
		db = &badger.BadgerBackend{Path: os.Args[1]}
	}
	if err := db.Init(); err != nil {
		panic(err)
	}
	relay := khatru.NewRelay()
	relay.StoreEvent = append(relay.StoreEvent, db.SaveEvent)
	relay.QueryEvents = append(relay.QueryEvents, db.QueryEvents)
	if c, ok := db.(eventstore.Counter); ok {
		relay.CountEvents = append(relay.CountEvents, c.CountEvents)
	}
	relay.DeleteEvent = append(relay.DeleteEvent, db.DeleteEvent)
	relay.ReplaceEvent = append(relay.ReplaceEvent, db.ReplaceEvent)
	panic(http.ListenAndServe(os.Args[2], relay))
}
GO
	(
		cd "$src"
		[ -f go.mod ] || go mod init scratch/khatru >/dev/null 2>&1
		go get github.com/fiatjaf/khatru@v0.19.1 github.com/fiatjaf/eventstore@v0.16.2 github.com/nbd-wtf/go-nostr@v0.52.3
		go mod tidy
		go build -o "$KHATRU" .
	)
fi
KHATRU_BADGER="$KHATRU" KHATRU_PG="$KHATRU"

# The two verifier builds: the default (what `go run ./cmd/buzzd` gives,
# pure Go) and the system libsecp256k1 one.
go build -o "$OUT/buzzd" ./cmd/buzzd
go build -tags libsecp256k1 -o "$OUT/buzzd-libsecp256k1" ./cmd/buzzd
go build -o "$OUT/buzzbench" ./cmd/buzzbench

# A fresh database per run; autovacuum stays as the server has it (off on
# the project machine), which is the point of the fresh-database figures.
fresh() { echo "psql -q '$PG/postgres' -c 'DROP DATABASE IF EXISTS $1 WITH (FORCE)' -c 'CREATE DATABASE $1'"; }
# khatru limits no client; buzzd's per-connection message rate (1,000/s by
# default) would answer part of the sequential REQ run with CLOSED, and its
# 10,000-connection cap would refuse the publisher of the 10,000-subscriber
# fan-out.
buzzd_env='BUZZ_LOG_LEVEL=warn BUZZ_MAX_CONNECTIONS=100000 BUZZ_MAX_CONNECTIONS_PER_ADDRESS=100000 BUZZ_MESSAGE_RATE=1000000 BUZZ_MESSAGE_BURST=1000000'
bench="taskset -c 1 $OUT/buzzbench -runs $RUNS"

cmds=()
# 1. Embedded store vs khatru + badger: every figure of the table under "buzzd against khatru"
#    in docs/benchmarks.md.
want embedded && for bin in $BUILDS; do
	[ -x "$OUT/$bin" ] || continue
	cmds+=("$bench -json-out $OUT/embedded-$bin.json -name khatru-badger -b-name $bin \
  -url ws://127.0.0.1:3111 -start 'D=\$(mktemp -d) && exec taskset -c 0 $KHATRU_BADGER \$D 127.0.0.1:3111' \
  -b ws://127.0.0.1:3112 -b-start 'RELAY_URL=ws://127.0.0.1:3112 BUZZ_BIND_ADDR=127.0.0.1:3112 BUZZ_DATA_DIR=\$(mktemp -d) $buzzd_env exec taskset -c 0 $OUT/$bin' \
  -window 64 ingest,ingest-pipelined,req,count,fanout,idle")
done
# 2. PostgreSQL, fresh database each run, vs khatru + eventstore/postgresql.
want postgres && for bin in $BUILDS; do
	[ -x "$OUT/$bin" ] || continue
	cmds+=("$bench -json-out $OUT/postgres-$bin.json -name khatru-pg -b-name $bin-pg \
  -url ws://127.0.0.1:3113 -start \"$(fresh buzzbench_khatru) && exec taskset -c 0 $KHATRU_PG $PG/buzzbench_khatru 127.0.0.1:3113\" \
  -b ws://127.0.0.1:3114 -b-start \"$(fresh buzzbench_buzzd) && RELAY_URL=ws://127.0.0.1:3114 BUZZ_BIND_ADDR=127.0.0.1:3114 DATABASE_URL=$PG/buzzbench_buzzd BUZZ_AUTO_MIGRATE=true $buzzd_env exec taskset -c 0 $OUT/$bin\" \
  ingest,ingest-pipelined,req,count,fanout")
done
# 3. Fan-out tails with 1,000 and 10,000 subscribers (embedded, default build).
want fanout && for subs in 1000 10000; do
	cmds+=("$bench -json-out $OUT/fanout-$subs.json -subs $subs -name khatru-badger -b-name buzzd \
  -url ws://127.0.0.1:3115 -start 'D=\$(mktemp -d) && exec taskset -c 0 $KHATRU_BADGER \$D 127.0.0.1:3115' \
  -b ws://127.0.0.1:3116 -b-start 'RELAY_URL=ws://127.0.0.1:3116 BUZZ_BIND_ADDR=127.0.0.1:3116 BUZZ_DATA_DIR=\$(mktemp -d) $buzzd_env exec taskset -c 0 $OUT/buzzd' \
  fanout")
done

for c in "${cmds[@]}"; do
	echo "$c"
	echo
done
if [ "$mode" = run ]; then
	for f in "$KHATRU_BADGER" "$KHATRU_PG"; do
		[ -x "$f" ] || { echo "missing khatru binary $f (see the top of this script)" >&2; exit 1; }
	done
	ulimit -n 65536 2>/dev/null || echo "could not raise the open-file limit; 10,000 subscribers may fail" >&2
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt"
	for c in "${cmds[@]}"; do
		echo "== $c"
		bash -c "$c"
		echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
	done
fi
