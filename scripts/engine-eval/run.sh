#!/bin/sh
# Timed runs: every engine, batch 8 and 64, 3 fresh databases each, then the
# two read shapes (3 runs) on the last batch-64 database. Pinned to core 0,
# holding a lock (BENCH_LOCK) that other pinned benchmarks take too. Output:
# the file named by $1 [results.txt], one line per run.
#
# ENGINES lists the cells: an engine (bin/bench-ENGINE), optionally with one
# flag after a colon: modernc:-fts=false (no text index), badger:-sync=false
# (badger's default, as khatru runs it). Default: every engine and both
# variants. N [20000] events per write run.
cd "$(dirname "$0")"
DB=/tmp/engine-eval-db
mkdir -p $DB
out=${1:-results.txt}
: > "$out"
ENGINES=${ENGINES:-modernc modernc:-fts=false mattn ncruces pebble badger badger:-sync=false bbolt}
N=${N:-20000}
export DB out ENGINES N
flock "${BENCH_LOCK:-/tmp/buzz-bench.lock}" sh -c '
cell() { e=${1%%:*}; f=; l=$e; case $1 in *:-fts=false) f=-fts=false; l=$e-nofts ;; *:-sync=false) f=-sync=false; l=$e-nosync ;; esac; }
for rep in 1 2 3; do
  for c in $ENGINES; do
    cell $c
    for b in 8 64; do
      rm -rf $DB/$e-b$b
      taskset -c 0 ./bin/bench-$e $f -mode write -batch $b -n $N -db $DB/$e-b$b | sed "s/^engine=$e /engine=$l /" | tee -a "$out"
    done
  done
done
for rep in 1 2 3; do
  for c in $ENGINES; do
    cell $c
    case $f in *sync*|*fts*) continue ;; esac
    taskset -c 0 ./bin/bench-$e -mode read -q 5000 -n $N -db $DB/$e-b64 2>/dev/null | tee -a "$out"
  done
done
'
