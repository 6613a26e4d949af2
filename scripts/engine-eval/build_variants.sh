#!/bin/sh
# Build checks: CGO_ENABLED=0 for each engine, and FTS5 without the opt-in.
cd "$(dirname "$0")"
for t in modernc mattn,sqlite_fts5 ncruces; do
  n=${t%%,*}
  if CGO_ENABLED=0 nice -n 19 ionice -c3 go build -tags "$t" -o bin/variants/nocgo-$n . 2>bin/variants/nocgo-$n.err; then
    echo "CGO_ENABLED=0 $n: builds"; else echo "CGO_ENABLED=0 $n: FAILS: $(head -3 bin/variants/nocgo-$n.err)"; fi
done
nice -n 19 ionice -c3 go build -tags mattn -o bin/variants/mattn-notag . && echo "mattn without sqlite_fts5: builds"
nice -n 19 ionice -c3 go build -tags ncruces,nofts5 -o bin/variants/ncruces-nofts5 . && echo "ncruces without ext/fts5: builds"
