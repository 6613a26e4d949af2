package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/tenant"
)

func runLoad(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	db, host := dbFlags(fs)
	in := fs.String("in", "/tmp/buzzseed.jsonl", "events file written by gen")
	mode := fs.String("mode", "copy", "copy (COPY in chunks) or save (Store.Save from -workers goroutines, group-committed)")
	chunk := fs.Int("chunk", 20000, "events per COPY transaction")
	workers := fs.Int("workers", 64, "concurrent Save callers (-mode save)")
	limit := fs.Int("limit", 0, "load at most this many events (0 = all)")
	committers := fs.Int("committers", 4, "group-commit transactions in flight (-mode save)")
	batchSize := fs.Int("batch", 256, "group-commit batch size (-mode save)")
	linger := fs.Duration("linger", 0, "group-commit linger under load (-mode save)")
	skip := fs.Int("skip", 0, "skip this many events of the file first (to resume an interrupted load)")
	communities := fs.Int("communities", 1, "spread the events round-robin over this many communities (c000.<host> …; 1 = -host only)")
	backend := fs.String("backend", "postgres", "postgres (-db) or sqlite (-dir; implies -mode save)")
	dir := fs.String("dir", "/tmp/buzzseed-sqlite", "embedded store directory (-backend sqlite)")
	analyze := fs.Bool("analyze", true, "VACUUM ANALYZE after a PostgreSQL load (false leaves the database never analysed, as a fresh deployment without autovacuum)")
	_ = fs.Parse(args)

	var s store.Backend
	switch *backend {
	case "postgres":
		if err := createDatabase(ctx, *db); err != nil {
			return err
		}
		if err := postgres.Migrate(ctx, *db); err != nil {
			return err
		}
		ps, err := postgres.Open(ctx, *db, postgres.WithMaxConns(16), postgres.WithCommitters(*committers),
			postgres.WithGroupCommit(*batchSize, *linger))
		if err != nil {
			return err
		}
		s = ps
	case "sqlite":
		ss, err := embedded.Open(ctx, *dir)
		if err != nil {
			return err
		}
		s, *mode = ss, "save"
	default:
		return fmt.Errorf("unknown -backend %q", *backend)
	}
	defer s.Close()
	cs := make([]tenant.CommunityID, max(1, *communities))
	for k := range cs {
		var err error
		if cs[k], _, err = s.EnsureCommunity(ctx, communityHost(*host, k, len(cs))); err != nil {
			return err
		}
	}
	// The i-th event of the file (counting skipped ones) goes to cs[i % K].
	seq := *skip
	type item struct {
		c  tenant.CommunityID
		ev *nostr.Event
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	next := func() (item, error) {
		if !sc.Scan() {
			return item{}, sc.Err()
		}
		ev, err := nostr.ParseEvent(sc.Bytes())
		it := item{cs[seq%len(cs)], ev}
		seq++
		return it, err
	}

	for range *skip {
		if !sc.Scan() {
			return fmt.Errorf("-skip %d: file has fewer events", *skip)
		}
	}
	start := time.Now()
	var total int64
	switch *mode {
	case "copy":
		batch := make([]item, 0, *chunk)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			for _, c := range cs {
				var evs []*nostr.Event
				for _, it := range batch {
					if it.c == c {
						evs = append(evs, it.ev)
					}
				}
				if len(evs) == 0 {
					continue
				}
				n, err := postgres.BulkLoad(ctx, *db, c, evs)
				total += n
				if err != nil {
					return err
				}
			}
			batch = batch[:0]
			fmt.Fprintf(os.Stderr, "\r%d events, %.0f/s", total, float64(total)/time.Since(start).Seconds())
			return nil
		}
		for *limit == 0 || int(total)+len(batch) < *limit {
			it, err := next()
			if err != nil {
				return err
			}
			if it.ev == nil {
				break
			}
			batch = append(batch, it)
			if len(batch) == *chunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
	case "save":
		ch := make(chan item, 4096)
		var saved, dup, failed atomic.Int64
		var wg sync.WaitGroup
		for range *workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for it := range ch {
					switch err := s.Save(ctx, it.c, it.ev); {
					case err == nil:
						saved.Add(1)
					case store.IsOutcome(err):
						dup.Add(1)
					default:
						if failed.Add(1) < 5 {
							fmt.Fprintln(os.Stderr, "save:", err)
						}
					}
				}
			}()
		}
		read := 0
		for *limit == 0 || read < *limit {
			it, err := next()
			if err != nil {
				close(ch)
				return err
			}
			if it.ev == nil {
				break
			}
			ch <- it
			read++
		}
		close(ch)
		wg.Wait()
		total = saved.Load()
		fmt.Fprintf(os.Stderr, "saved %d, refused by the store (duplicate, superseded, deleted, reaction slot held) %d, failed %d\n", saved.Load(), dup.Load(), failed.Load())
	default:
		return fmt.Errorf("unknown -mode %q", *mode)
	}
	el := time.Since(start)
	fmt.Fprintf(os.Stderr, "\nloaded %d events in %v: %.0f events/s (%s)\n", total, el.Round(time.Millisecond), float64(total)/el.Seconds(), *mode)
	if *backend != "postgres" || !*analyze {
		return nil
	}
	conn, err := pgx.Connect(ctx, *db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, t := range []string{"events", "event_tags"} {
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+t); err != nil {
			return err
		}
	}
	return nil
}

// createDatabase creates the URL's database if it does not exist, through
// the server's "postgres" database.
func createDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return nil
	}
	u.Path = "/postgres"
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}
