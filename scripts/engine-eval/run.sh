#!/bin/sh
# Timed runs: every engine, batch 8 and 64, 3 fresh databases each, then the
# two read shapes (3 runs) on the last batch-64 database. Pinned to core 0,
# holding a lock (BENCH_LOCK) that other pinned benchmarks take too. Output: results.txt (one line per run).
cd "$(dirname "$0")"
DB=/tmp/engine-eval-db
mkdir -p $DB
out=${1:-results.txt}
: > "$out"
flock "${BENCH_LOCK:-/tmp/buzz-bench.lock}" sh -c '
for rep in 1 2 3; do
  for e in modernc mattn ncruces; do
    for b in 8 64; do
      taskset -c 0 ./bin/bench-$e -mode write -batch $b -n 20000 -db '$DB'/$e-b$b.sqlite3 | tee -a '"$out"'
    done
  done
done
for rep in 1 2 3; do
  for e in modernc mattn ncruces; do
    taskset -c 0 ./bin/bench-$e -mode read -q 5000 -n 20000 -db '$DB'/$e-b64.sqlite3 2>/dev/null | tee -a '"$out"'
  done
done
'
