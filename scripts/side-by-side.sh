#!/usr/bin/env bash
# Side by side, pinned: buzzd's builds against khatru and strfry, relay on
# core 0 and load tool on core 1, the same buzzbench invocation for every
# relay, and one table at the end. For a QUIET machine only: figures taken
# while other work runs are not comparable.
#
#   scripts/side-by-side.sh          # build, then print the commands
#   scripts/side-by-side.sh run      # build, measure, print the table (minutes per column and run)
#   scripts/side-by-side.sh table    # print the table of the reports already in $OUT
#
# Each run measures every column once, in turn (one buzzbench invocation per
# column and run, -runs 1, each relay started on a fresh data directory or
# database; the embedded store's runs all before PostgreSQL's), so a slow
# minute of the machine hits every relay alike; the
# table (`buzzbench -merge`) gives the median over the runs of each figure,
# under a header naming the machine, every build and the date. Before the
# runs, BenchmarkVerifyCeiling of package nostr runs on core 0 for each
# buzzd build: the events per second one core admits if the relay did
# nothing but verify them (in batches of 64, as a busy relay does), and the
# table gives closed-loop ingest as a fraction of it.
#
# Columns: BUILDS, the buzzd builds (buzzd is the default build, which
# verifies in pure Go; buzzd-libsecp256k1 the -tags libsecp256k1 one, which
# links the system libsecp256k1), then PEERS:
#   khatru           khatru v0.19.1 with eventstore v0.16.2 (badger), go-nostr v0.52.3
#   strfry           strfry (C++, LMDB), pinned to core 0 like the others
#   strfry-allcores  the same strfry without taskset: it sizes thread pools
#                    for many cores, so it also runs with every core it wants
#                    (the load tool stays on core 1)
# With PARTS containing postgres, buzzd's builds on PostgreSQL (BUILD-pg) and
# khatru with eventstore/postgresql (khatru-pg) are columns too.
# With PARTS containing crosspod, each buzzd build is also a column of three
# pods (BUILD-3pods): one deployment of three buzzd processes on one fresh
# PostgreSQL database and the Redis at $REDIS, each pod pinned to core 0
# like every relay (PostgreSQL and Redis are not pinned), buzzbench on core
# 1. It runs fanout (publisher and subscribers on the first pod) and
# crosspod (publisher on the first pod, the subscribers spread over the
# other two, which they reach at their own ports while naming the first
# pod's host, as behind a load balancer), so every live delivery of crosspod
# crosses pods through Redis. Each run migrates the fresh database once,
# then starts the pods under a Redis namespace of its own
# (BUZZ_REDIS_NAMESPACE=sbs<pid>): nothing of an earlier run is seen, and
# nothing is flushed. No peer has a multi-pod mode, so the part has buzzd
# columns only.
# With PARTS containing auth, buzzd's builds and khatru are measured again with
# buzzbench -auth-per-author (columns BUILD+auth, khatru+auth): ingest over
# one connection per corpus author, each authenticated (NIP-42) as its
# author, then REQ and COUNT on authenticated connections; khatru runs with
# KHATRU_AUTH=1, which makes it challenge every connection on connect as
# buzzd does (strfry does not do NIP-42 and has no auth column).
#
# The peers are never built inside this repository:
# - khatru: a scratch module under $OUT/khatru-src (a main.go wiring
#   khatru.NewRelay() to one event store: Save, Query, Count, Delete,
#   Replace; with KHATRU_AUTH=1 in its environment it also sends a NIP-42
#   challenge on connect (khatru.RequestAuth); nothing else), built there. KHATRU=/path/to/binary skips that;
#   the binary takes `DIR ADDR` (badger) or `postgres://… ADDR`.
# - strfry: cloned at STRFRY_REF into $OUT/strfry-src with its submodules and
#   built with its own Makefile (`make setup-golpe`, `make`), as strfry's
#   README says. STRFRY=/path/to/strfry skips that (a strfry built any other
#   way, e.g. from a mirror without network access); STRFRY_VERSION then
#   names it in the header. The relay gets a fresh LMDB directory per run and
#   a config written there: bind 127.0.0.1, maxFilterLimit 1000 (the load
#   tool asks for up to 500 events), events accepted back to 2000 (the
#   corpus is dated from 2020), everything else strfry's default.
#
# Prerequisites on a fresh Debian (12 or later), as root:
#   apt-get install -y git ca-certificates build-essential pkg-config util-linux \
#     libsecp256k1-dev postgresql-client \
#     libssl-dev zlib1g-dev liblmdb-dev libflatbuffers-dev libzstd-dev \
#     libyaml-perl libtemplate-perl libregexp-grammars-perl
# (the second line is for buzzd-libsecp256k1 and the PostgreSQL part, the
# last two for strfry), and Go at least the version go.mod names, from
# https://go.dev/dl (Debian's is older). Two cores at least (taskset -c 0
# and -c 1); the PostgreSQL part needs a server at $PG.
#
# Environment (defaults in brackets): OUT [/tmp/side-by-side] for the
# binaries, reports (OUT/reports/*.json) and logs; RUNS [3]; BUILDS ["buzzd
# buzzd-libsecp256k1"]; PEERS ["khatru strfry strfry-allcores"]; PARTS
# ["embedded"]: embedded (the table's main columns), postgres (the
# PostgreSQL columns, databases buzzbench_* dropped and recreated for every
# run), analyzed (with postgres: each PostgreSQL column again as
# LABEL-analyzed, measuring req and count after the corpus is loaded and
# `ANALYZE` has run on the whole database: buzzbench -before-reads),
# fanout (fan-out rows with 1,000 and 10,000 subscribers), crosspod
# (three pods, above), auth (the authenticated columns, above);
# PG [postgres://postgres@127.0.0.1:5432]; REDIS
# [redis://127.0.0.1:6379/0], for crosspod; EVENTS [20000], the corpus size;
# BENCH_FLAGS [], more buzzbench flags for every invocation (a quick check of
# the script: RUNS=1 EVENTS=1000 CEILING_RUNS=1 CEILING_TIME=200x
# BENCH_FLAGS="-reqs 140 -subs 20 -publishes 20 -idle 50").
# CEILING=0 skips the verify ceiling; CEILING_RUNS [5] and CEILING_TIME [2s]
# are its benchmark runs (the median is taken) and -test.benchtime.
# STRFRY_REF [1.1.1].
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-print}"
case "$mode" in print | run | table) ;; *)
	echo "usage: $0 [print|run|table]" >&2
	exit 2
	;;
esac
OUT="${OUT:-/tmp/side-by-side}"
PG="${PG:-postgres://postgres@127.0.0.1:5432}"
REDIS="${REDIS:-redis://127.0.0.1:6379/0}"
RUNS="${RUNS:-3}"
BUILDS="${BUILDS:-buzzd buzzd-libsecp256k1}"
PEERS="${PEERS:-khatru strfry strfry-allcores}"
PARTS="${PARTS:-embedded}"
EVENTS="${EVENTS:-20000}"
BENCH_FLAGS="${BENCH_FLAGS:-}"
CEILING="${CEILING:-1}"
CEILING_RUNS="${CEILING_RUNS:-5}"
CEILING_TIME="${CEILING_TIME:-2s}"
STRFRY_REF="${STRFRY_REF:-1.1.1}"
KHATRU="${KHATRU:-}"
STRFRY="${STRFRY:-}"
STRFRY_VERSION="${STRFRY_VERSION:-}"
has() { case " $1 " in *" $2 "*) return 0 ;; esac; return 1; }
mkdir -p "$OUT/reports" "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
REPORTS="$OUT/reports"

# The header: machine, builds, date. Written once per build step, printed
# above the table.
header() {
	local cpu
	cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "machine: ${cpu:-unknown CPU}, $(nproc) cores, Linux $(uname -r), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "pinning: each relay on core 0 (strfry-allcores: no pinning), buzzbench on core 1"
	if has "$PARTS" crosspod; then
		echo "crosspod: 3 buzzd pods, each on core 0, one PostgreSQL database, Redis $REDIS (a namespace per run); subscribers on pods 2 and 3, publisher on pod 1"
	fi
	local commit dirty=""
	commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=" (dirty: uncommitted changes)"
	echo "buzz: commit $commit$dirty, $(go version | cut -d' ' -f3-)"
	for b in $BUILDS; do
		case "$b" in
		buzzd) echo "  buzzd: default build, pure-Go verifier" ;;
		buzzd-libsecp256k1) echo "  buzzd-libsecp256k1: -tags libsecp256k1, system libsecp256k1 $(pkg-config --modversion libsecp256k1 2>/dev/null || echo '?')" ;;
		esac
	done
	if has "$PEERS" khatru; then
		echo "  khatru: ${KHATRU_VERSION:-v0.19.1, eventstore v0.16.2 (badger, postgresql), go-nostr v0.52.3}"
	fi
	if has "$PEERS" strfry || has "$PEERS" strfry-allcores; then
		echo "  strfry: $STRFRY_VERSION"
	fi
	echo "corpus: $EVENTS events; buzzbench flags: -conns 16 -window 64${BENCH_FLAGS:+ $BENCH_FLAGS}"
}

# --- builds ---------------------------------------------------------------

# Every relay runs from a copy of its binary, as a deployment does (a
# package, an image, an scp). The Go linker writes its output through a
# memory mapping, and on recent Linux kernels the page cache then holds that
# file in large folios: a process running it maps a whole folio at each
# fault in its code, so it counts far more of its binary as resident than
# one running a copy (buzzd at start: 49 MiB of its own code and tables,
# against 34 MiB for a copy written by cp). The copy is what is measured.
runcopy() { # SRC DEST
	cp "$1" "$2.tmp" && mv "$2.tmp" "$2"
}

build() {
for b in $BUILDS; do
	case "$b" in
	buzzd) go build -o "$OUT/buzzd.linked" ./cmd/buzzd && runcopy "$OUT/buzzd.linked" "$OUT/buzzd" ;;
	buzzd-libsecp256k1) go build -tags libsecp256k1 -o "$OUT/buzzd-libsecp256k1.linked" ./cmd/buzzd && runcopy "$OUT/buzzd-libsecp256k1.linked" "$OUT/buzzd-libsecp256k1" ;;
	*)
		echo "unknown build $b (known: buzzd buzzd-libsecp256k1)" >&2
		exit 2
		;;
	esac
done
go build -o "$OUT/buzzbench" ./cmd/buzzbench

if has "$PEERS" khatru && [ -z "$KHATRU" ]; then
	KHATRU="$OUT/khatru"
	src="$OUT/khatru-src"
	mkdir -p "$src"
	cat >"$src/main.go" <<'GO'
// Command khatru is the peer relay of buzz's side-by-side benchmark:
// khatru with one eventstore backend and nothing else.
package main

import (
	"context"
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
	if os.Getenv("KHATRU_AUTH") == "1" {
		// Challenge every connection on connect (NIP-42), as an
		// auth-required deployment does; nothing is refused.
		relay.OnConnect = append(relay.OnConnect, func(ctx context.Context) { khatru.RequestAuth(ctx) })
	}
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
elif has "$PEERS" khatru; then
	KHATRU_VERSION="${KHATRU_VERSION:-$KHATRU (given)}"
fi
if has "$PEERS" khatru; then
	runcopy "$KHATRU" "$OUT/khatru.run"
	KHATRU="$OUT/khatru.run"
fi

if { has "$PEERS" strfry || has "$PEERS" strfry-allcores; } && [ -z "$STRFRY" ]; then
	src="$OUT/strfry-src"
	if [ ! -d "$src/.git" ]; then
		git clone --branch "$STRFRY_REF" https://github.com/hoytech/strfry "$src"
	fi
	(
		cd "$src"
		git checkout -q "$STRFRY_REF"
		git submodule update --init
		make setup-golpe
		make -j"$(nproc)"
	)
	STRFRY="$src/strfry"
	STRFRY_VERSION="${STRFRY_VERSION:-$(git -C "$src" describe --tags --always) ($(git -C "$src" rev-parse --short HEAD)), golpe $(git -C "$src/golpe" rev-parse --short HEAD), built with its Makefile}"
fi
if [ -n "$STRFRY" ]; then
	[ -x "$STRFRY" ] || {
		echo "STRFRY=$STRFRY is not an executable" >&2
		exit 1
	}
	STRFRY="$(cd "$(dirname "$STRFRY")" && pwd)/$(basename "$STRFRY")"
	STRFRY_VERSION="${STRFRY_VERSION:-$STRFRY (given; set STRFRY_VERSION to describe it)}"
	runcopy "$STRFRY" "$OUT/strfry.run"
	STRFRY="$OUT/strfry.run"
	# strfry DBDIR PORT: a config in DBDIR, then the relay in the foreground.
	cat >"$OUT/strfry-run" <<SH
#!/bin/sh
set -e
cat >"\$1/strfry.conf" <<CONF
db = "\$1/"
events {
    rejectEventsOlderThanSeconds = 946080000
}
relay {
    bind = "127.0.0.1"
    port = \$2
    nofiles = 0
    maxFilterLimit = 1000
}
CONF
exec "$STRFRY" --config="\$1/strfry.conf" relay
SH
	chmod +x "$OUT/strfry-run"
fi

header >"$OUT/header.txt"
}
[ "$mode" = table ] || build

# --- the verify ceiling ---------------------------------------------------

# One report per build in buzzbench's JSON shape, scenario verify-ceiling,
# so -merge puts the ceiling (and ingest's fraction of it) in the build's
# column: CEILING_RUNS benchmark runs on core 0, nothing else running.
ceiling() { # build tags
	local b="$1" tags="$2" test="$OUT/nostr-$1.test" runs=() v
	go test -c ${tags:+-tags "$tags"} -o "$test" ./nostr
	for _ in $(seq 1 "$CEILING_RUNS"); do
		v="$(taskset -c 0 "$test" -test.run '^$' -test.bench '^BenchmarkVerifyCeiling$/^batch=64$' -test.cpu 1 -test.benchtime "$CEILING_TIME" |
			awk '{for (i = 2; i <= NF; i++) if ($i == "events/s") print $(i-1)}')"
		[ -n "$v" ] || {
			echo "BenchmarkVerifyCeiling printed no events/s for $b" >&2
			exit 1
		}
		runs+=("[{\"scenario\":\"verify-ceiling\",\"metrics\":[{\"name\":\"events_per_s\",\"unit\":\"ev/s\",\"value\":$v,\"better\":\"higher\"}]}]")
	done
	local IFS=,
	printf '{"config":{},"targets":[{"relay":{"label":"%s"},"runs":[%s]}]}\n' "$b" "${runs[*]}" >"$REPORTS/ceiling-$b.json"
}

# --- the columns ------------------------------------------------------------

# khatru limits no client; buzzd's per-connection message rate (1,000/s by
# default) would answer part of the sequential REQ run with CLOSED, and its
# 10,000-connection cap would refuse the publisher of the 10,000-subscriber
# fan-out.
buzzd_env='BUZZ_LOG_LEVEL=warn BUZZ_MAX_CONNECTIONS=100000 BUZZ_MAX_CONNECTIONS_PER_ADDRESS=100000 BUZZ_MESSAGE_RATE=1000000 BUZZ_MESSAGE_BURST=1000000'
# A fresh database per run; autovacuum stays as the server has it.
fresh() { echo "psql -q '$PG/postgres' -c 'DROP DATABASE IF EXISTS $1 WITH (FORCE)' -c 'CREATE DATABASE $1'"; }

# column LABEL PORT START [DB]: one column of the embedded or PostgreSQL
# part; DB is a PostgreSQL column's database (PARTS analyzed runs ANALYZE
# on it).
labels=() ports=() starts=() dbs=()
column() { labels+=("$1") ports+=("$2") starts+=("$3") dbs+=("${4:-}"); }
port=3111
if has "$PARTS" embedded || has "$PARTS" fanout || has "$PARTS" auth; then
	for b in $BUILDS; do
		column "$b" $port "RELAY_URL=ws://127.0.0.1:$port BUZZ_BIND_ADDR=127.0.0.1:$port BUZZ_DATA_DIR=\$(mktemp -d) $buzzd_env exec taskset -c 0 $OUT/$b"
		port=$((port + 1))
	done
	if has "$PEERS" khatru; then
		column khatru $port "D=\$(mktemp -d) && exec taskset -c 0 $KHATRU \$D 127.0.0.1:$port"
		port=$((port + 1))
	fi
	if has "$PEERS" strfry; then
		column strfry $port "D=\$(mktemp -d) && exec taskset -c 0 $OUT/strfry-run \$D $port"
		port=$((port + 1))
	fi
	if has "$PEERS" strfry-allcores; then
		column strfry-allcores $port "D=\$(mktemp -d) && exec $OUT/strfry-run \$D $port"
		port=$((port + 1))
	fi
fi
embedded_columns=${#labels[@]}
if has "$PARTS" postgres; then
	for b in $BUILDS; do
		db="buzzbench_${b//-/_}"
		column "$b-pg" $port "$(fresh "$db") && RELAY_URL=ws://127.0.0.1:$port BUZZ_BIND_ADDR=127.0.0.1:$port DATABASE_URL=$PG/$db BUZZ_AUTO_MIGRATE=true $buzzd_env exec taskset -c 0 $OUT/$b" "$db"
		port=$((port + 1))
	done
	if has "$PEERS" khatru; then
		column khatru-pg $port "$(fresh buzzbench_khatru) && exec taskset -c 0 $KHATRU $PG/buzzbench_khatru 127.0.0.1:$port" buzzbench_khatru
		port=$((port + 1))
	fi
fi

# The crosspod part's columns: three pods of one build, each started with
# the same settings but its own address and pod name.
xlabels=() xports=() xstarts=()
if has "$PARTS" crosspod; then
	for b in $BUILDS; do
		db="buzzbench_${b//-/_}_3pods"
		a=$port
		env="DATABASE_URL=$PG/$db REDIS_URL=$REDIS BUZZ_REDIS_NAMESPACE=sbs\$\$ RELAY_URL=ws://127.0.0.1:$a $buzzd_env"
		start="$(fresh "$db") && export $env && $OUT/$b migrate"
		for p in $a $((a + 1)) $((a + 2)); do
			start+=" && { BUZZ_POD_NAME=pod$p BUZZ_BIND_ADDR=127.0.0.1:$p taskset -c 0 $OUT/$b & }"
		done
		xlabels+=("$b-3pods") xports+=("$a") xstarts+=("$start && wait")
		port=$((a + 3))
	done
fi

# The invocations, run by run, column by column: every run of the
# embedded store's parts first, then every run of PostgreSQL's. PostgreSQL
# writes a burst out in the background for a while after it (a load
# average of 5 to 12 on two cores), which would otherwise land on the
# next embedded run.
bench="taskset -c 1 $OUT/buzzbench -runs 1 -events $EVENTS -conns 16 -window 64 $BENCH_FLAGS"
cmds=() names=()
for pass in embedded postgres; do
	for r in $(seq 1 "$RUNS"); do
		for i in "${!labels[@]}"; do
			l="${labels[$i]}"
			if [ "$i" -lt "$embedded_columns" ]; then
				[ $pass = embedded ] && has "$PARTS" embedded || continue
				scen=ingest,ingest-pipelined,req,count,fanout,idle
			else
				[ $pass = postgres ] || continue
				scen=ingest,ingest-pipelined,req,count,fanout
			fi
			cmds+=("$bench -json-out $REPORTS/$l-run$r.json -name $l -url ws://127.0.0.1:${ports[$i]} -start $(printf %q "${starts[$i]}") $scen")
			names+=("$l run $r/$RUNS")
		done
		for i in "${!xlabels[@]}"; do
			[ $pass = postgres ] || continue
			l="${xlabels[$i]}" a="${xports[$i]}"
			cmds+=("$bench -json-out $REPORTS/$l-run$r.json -name $l -url ws://127.0.0.1:$a -sub-url ws://127.0.0.1:$((a + 1)),ws://127.0.0.1:$((a + 2)) -start $(printf %q "${xstarts[$i]}") fanout,crosspod")
			names+=("$l run $r/$RUNS")
		done
		if [ $pass = embedded ] && has "$PARTS" auth; then
			for ((i = 0; i < embedded_columns; i++)); do
				l="${labels[$i]}" start="${starts[$i]}"
				case "$l" in
				strfry*) continue ;;
				khatru) start="export KHATRU_AUTH=1 && $start" ;;
				esac
				cmds+=("$bench -auth-per-author -json-out $REPORTS/$l-auth-run$r.json -name $l -url ws://127.0.0.1:${ports[$i]} -start $(printf %q "$start") ingest,ingest-pipelined,req,count")
				names+=("$l authenticated run $r/$RUNS")
			done
		fi
		if [ $pass = postgres ] && has "$PARTS" analyzed; then
			for i in "${!labels[@]}"; do
				l="${labels[$i]}" db="${dbs[$i]}"
				[ -n "$db" ] || continue
				cmds+=("$bench -json-out $REPORTS/$l-analyzed-run$r.json -name $l-analyzed -before-reads $(printf %q "psql -q $PG/$db -c ANALYZE") -url ws://127.0.0.1:${ports[$i]} -start $(printf %q "${starts[$i]}") req,count")
				names+=("$l analyzed run $r/$RUNS")
			done
		fi
		if [ $pass = embedded ] && has "$PARTS" fanout; then
			for subs in 1000 10000; do
				for ((i = 0; i < embedded_columns; i++)); do
					l="${labels[$i]}"
					cmds+=("$bench -json-out $REPORTS/$l-fanout$subs-run$r.json -subs $subs -name $l -url ws://127.0.0.1:${ports[$i]} -start $(printf %q "${starts[$i]}") fanout")
					names+=("$l fan-out $subs run $r/$RUNS")
				done
			done
		fi
	done
done

# table: the header, then the reports merged, a column per label in the
# order above.
table() {
	local files=() f
	for l in "${labels[@]}" "${xlabels[@]}"; do
		for f in "$REPORTS/ceiling-$l.json" "$REPORTS/$l"-run*.json "$REPORTS/$l"-fanout*.json "$REPORTS/$l"-auth-run*.json "$REPORTS/$l"-analyzed-run*.json; do
			[ -f "$f" ] && files+=("$f")
		done
	done
	[ ${#files[@]} -gt 0 ] || {
		echo "no reports in $REPORTS" >&2
		exit 1
	}
	echo
	cat "$OUT/header.txt"
	echo
	[ -x "$OUT/buzzbench" ] || go build -o "$OUT/buzzbench" ./cmd/buzzbench
	"$OUT/buzzbench" -merge "${files[@]}"
}
if [ "$mode" = table ]; then
	table
	exit 0
fi
if [ "$mode" = print ]; then
	for c in "${cmds[@]}"; do
		echo "$c"
		echo
	done
	exit 0
fi

if has "$PEERS" khatru && [ ! -x "$KHATRU" ]; then
	echo "missing khatru binary $KHATRU (see the top of this script)" >&2
	exit 1
fi
ulimit -n 65536 2>/dev/null || echo "could not raise the open-file limit; 10,000 subscribers may fail" >&2
rm -f "$REPORTS"/*.json
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt"
if [ "$CEILING" = 1 ]; then
	for b in $BUILDS; do
		case "$b" in
		buzzd) ceiling buzzd "" ;;
		buzzd-libsecp256k1) ceiling buzzd-libsecp256k1 libsecp256k1 ;;
		esac
	done
fi
# Each invocation's relays keep their data directories under a TMPDIR of
# its own, removed when it ends; the file systems are then synced, so that
# no relay's run pays for the write-back of the one before (a khatru run
# leaves hundreds of MiB of dirty pages behind).
for i in "${!cmds[@]}"; do
	echo "== ${names[$i]}"
	log="$OUT/logs/$(echo "${names[$i]}" | tr ' /' '__').log"
	data="$OUT/data"
	rm -rf "$data" && mkdir -p "$data"
	if ! TMPDIR="$data" bash -c "${cmds[$i]}" >"$log" 2>&1; then
		echo "failed (log: $log):" >&2
		tail -5 "$log" >&2
		exit 1
	fi
	rm -rf "$data"
	sync
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
done

table
