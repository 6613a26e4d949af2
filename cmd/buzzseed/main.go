// Command buzzseed loads realistic signed Nostr events into one community of
// a buzz PostgreSQL database and measures query latency on it.
//
//	buzzseed gen        -n 1000000 -out /tmp/buzzseed-1m.jsonl
//	buzzseed load       -db URL -host seed.example -in /tmp/buzzseed-1m.jsonl [-mode copy|save]
//	buzzseed query-bench -db URL -host seed.example [-n 2000] [-rls=true]
//	buzzseed tag-compare -db URL -host seed.example [-n 1000] [-keep-gin]
//
// gen is deterministic for a given -seed, -n, -authors and -end, signs in
// parallel and writes one event JSON per line (the exact bytes the store
// keeps as raw), so the slow part runs once and is cached. load copies them
// into the community (COPY, or -mode save through Store.Save with group
// commit, reporting events/s). query-bench runs the relay's typical filters
// through Store.Query/Count and prints p50/p99 per shape. tag-compare
// measures the two tag-index designs (JSONB containment with a GIN index vs
// the event_tags table) on the same data.
//
// -db must name a user that bypasses row-level security for load and
// tag-compare (the schema owner, e.g. postgres); query-bench switches to the
// RLS role like the relay does, unless -rls=false.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "gen":
		err = runGen(ctx, os.Args[2:])
	case "load":
		err = runLoad(ctx, os.Args[2:])
	case "query-bench":
		err = runQueryBench(ctx, os.Args[2:])
	case "tag-compare":
		err = runTagCompare(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "buzzseed:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: buzzseed gen|load|query-bench|tag-compare [flags]  (buzzseed <cmd> -h for flags)")
	os.Exit(2)
}

const defaultDB = "postgres://postgres@127.0.0.1:5432/buzzseed?sslmode=disable"

func dbFlags(fs *flag.FlagSet) (db, host *string) {
	return fs.String("db", defaultDB, "PostgreSQL URL (migrated with buzzd migrate or postgres.Migrate)"),
		fs.String("host", "seed.example", "community host")
}
