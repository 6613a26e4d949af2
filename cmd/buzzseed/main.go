// Command buzzseed loads realistic signed Nostr events into one community of
// a buzz PostgreSQL database and measures query latency on it.
//
//	buzzseed gen         -n 1000000 -out /tmp/buzzseed-1m.jsonl      # ~8 min on 2 cores, once
//	buzzseed load        -in /tmp/buzzseed-1m.jsonl [-mode copy|save] # creates + migrates -db
//	buzzseed migrate                                              # apply pending migrations to -db
//	buzzseed query-bench [-n 2000] [-rls=false]
//	buzzseed tag-compare [-n 1000] [-keep-gin]
//	buzzseed search-bench [-backend postgres|sqlite] [-communities N] [-n 500]
//
// Every subcommand takes -db (default postgres://postgres@127.0.0.1:5432/buzzseed) and
// -host (default seed.example, the community).
//
// gen is deterministic for a given -seed, -n, -authors and -end: 5,000
// authors (Zipf-distributed activity), each with a kind 0 profile and a kind
// 3 contact list (20–100 p tags); then kind 1 notes (70%: 40% with 1–3
// hashtags from 500, 30% replies with e/p tags to recent-biased roots, 20%
// with a mention), kind 7 reactions (25%, e/p/k tags) and kind 30023
// articles (5%, one d each), over the 30 days before -end; with -channels N
// a fifth of the notes become kind 9 messages with an h tag naming one of N
// channels (query-bench then adds two channel-timeline shapes). It signs in
// parallel and writes one event JSON per line (the exact bytes the store
// keeps as raw), so the slow part runs once. load copies the file into the
// community (COPY in 20,000-event transactions, then VACUUM ANALYZE), or
// with -mode save sends it through Store.Save from -workers goroutines
// (group commit) and reports events/s. query-bench runs the relay's typical
// filters through Store.Query/Count with parameters sampled from the data
// and prints p50/p90/p99 per shape. tag-compare measures the two tag-index
// designs (JSONB containment with a GIN index vs the event_tags table) on the
// same data. For search, gen -vocab N writes notes of Zipf-distributed words
// from a synthetic vocabulary, load -communities K spreads the file over K
// communities (c000.<host> …), load -backend sqlite fills an embedded store
// through Save, and search-bench measures NIP-50 searches by word frequency
// rank on either backend.
//
// -db must name a user that bypasses row-level security for load and
// tag-compare (the schema owner, e.g. postgres); query-bench switches to the
// RLS role like the relay does, unless -rls=false.
//
// It writes through the store backends and must not import the relay
// (package buzz).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/buzzrelay/buzz/store/postgres"
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
	case "migrate":
		fs := flag.NewFlagSet("migrate", flag.ExitOnError)
		db, _ := dbFlags(fs)
		_ = fs.Parse(os.Args[2:])
		err = postgres.Migrate(ctx, *db)
	case "query-bench":
		err = runQueryBench(ctx, os.Args[2:])
	case "tag-compare":
		err = runTagCompare(ctx, os.Args[2:])
	case "search-bench":
		err = runSearchBench(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "buzzseed:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: buzzseed gen|load|migrate|query-bench|search-bench|tag-compare [flags]  (buzzseed <cmd> -h for flags)")
	os.Exit(2)
}

const defaultDB = "postgres://postgres@127.0.0.1:5432/buzzseed?sslmode=disable"

func dbFlags(fs *flag.FlagSet) (db, host *string) {
	return fs.String("db", defaultDB, "PostgreSQL URL (migrated with buzzd migrate or postgres.Migrate)"),
		fs.String("host", "seed.example", "community host")
}
