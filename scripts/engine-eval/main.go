// Command engine-eval measures buzz's embedded SQLite write path and two read
// shapes on one SQLite driver, chosen at build time by a tag:
//
//	-tags modernc            modernc.org/sqlite (pure Go, transpiled C)
//	-tags mattn,sqlite_fts5  github.com/mattn/go-sqlite3 (cgo)
//	-tags ncruces            github.com/ncruces/go-sqlite3 (wasm2go)
//
// or one ordered key-value engine with buzz's indexes as key prefixes
// (kv.go): -tags pebble, -tags bbolt, -tags badger.
//
// See README.txt.
package main

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed schema.sql
var schema string

var pragmas = []string{
	"PRAGMA busy_timeout = 5000",
	"PRAGMA journal_mode = WAL",
	"PRAGMA synchronous = NORMAL",
	"PRAGMA foreign_keys = OFF",
	"PRAGMA temp_store = MEMORY",
	"PRAGMA cache_size = -32000",
	"PRAGMA wal_autocheckpoint = 8000",
}

// ---------- corpus ----------

type tagKV struct{ name, value string }

type event struct {
	id, pubkey []byte
	createdAt  int64
	kind       int
	coordinate bool
	raw        []byte
	tags       []tagKV // single-letter tags, sorted, distinct (as buzz's prepare)
}

var words = strings.Fields(`the a relay note event key sign bitcoin lightning zap nostr client
pubkey filter subscribe community channel thread reply garden coffee morning rust go code
build ship test bench latency queue socket frame index query store cache market music photo
film book river mountain city train weather today tomorrow friend family love open free
protocol network signal noise value energy time space light dark simple small fast slow
🤙 ⚡ 🌻 été naïve café 日本 データ`)

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func text(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}

func skewed(r *rand.Rand, n int) int {
	u := r.Float64()
	return min(int(float64(n)*u*u*u), n-1)
}

type corpus struct {
	events  []event
	authors [][]byte
	topics  []string
}

// buildCorpus is deterministic for a seed: every engine gets the same bytes.
func buildCorpus(seed uint64, n int) *corpus {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &corpus{}
	const nAuthors = 200
	for range nAuthors {
		c.authors = append(c.authors, randBytes(r, 32))
	}
	for i := range 50 {
		c.topics = append(c.topics, fmt.Sprintf("topic%02d-%s", i, words[i%len(words)]))
	}
	// Kinds: one profile (0) and one contact list (3) per author (unique
	// coordinates, as buzzbench's corpus), the rest ~66% notes (1), 25%
	// reactions (7), 9% reposts (6). Replaceables at random positions.
	kinds := make([]int, 0, n)
	for range nAuthors {
		kinds = append(kinds, 0, 3)
	}
	for len(kinds) < n {
		switch x := r.IntN(100); {
		case x < 66:
			kinds = append(kinds, 1)
		case x < 91:
			kinds = append(kinds, 7)
		default:
			kinds = append(kinds, 6)
		}
	}
	r.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	profileDone := make([]bool, nAuthors)
	contactsDone := make([]bool, nAuthors)
	nextUnused := func(done []bool) int {
		for {
			a := r.IntN(nAuthors)
			if !done[a] {
				done[a] = true
				return a
			}
		}
	}
	var ids [][]byte // ids of earlier notes, for e tags
	ts := int64(1700000000)
	hexs := func(b []byte) string { return hex.EncodeToString(b) }
	for _, kind := range kinds {
		ts += 5 + r.Int64N(10) // increasing with jitter
		createdAt := ts - r.Int64N(4)
		var a int
		switch kind {
		case 0:
			a = nextUnused(profileDone)
		case 3:
			a = nextUnused(contactsDone)
		default:
			a = skewed(r, nAuthors)
		}
		var tags [][]string
		content := ""
		switch kind {
		case 0:
			content = fmt.Sprintf(`{"name":"user%d","about":%s,"picture":"https://example.com/avatars/%d.png","nip05":"user%d@example.com"}`,
				a, strconv.Quote(text(r, 60+r.IntN(80))), a, a)
		case 3:
			perm := r.Perm(nAuthors)
			np := 20 + r.IntN(131) // 20..150, capped by the 199 others
			for _, j := range perm {
				if len(tags) == np {
					break
				}
				if j != a {
					tags = append(tags, []string{"p", hexs(c.authors[j])})
				}
			}
		case 1:
			content = text(r, 100+r.IntN(80)) // ~140 bytes
			for k := r.IntN(4); k > 0; k-- {
				tags = append(tags, []string{"t", c.topics[r.IntN(len(c.topics))]})
			}
			for k := r.IntN(3); k > 0 && len(ids) > 0; k-- {
				tags = append(tags, []string{"e", hexs(ids[r.IntN(len(ids))]), "", "reply"})
			}
			for k := r.IntN(4); k > 0; k-- {
				tags = append(tags, []string{"p", hexs(c.authors[r.IntN(nAuthors)])})
			}
		case 7, 6:
			var target []byte
			if len(ids) > 0 {
				target = ids[len(ids)-1-skewed(r, len(ids))]
			} else {
				target = randBytes(r, 32)
			}
			tags = append(tags, []string{"e", hexs(target)}, []string{"p", hexs(c.authors[r.IntN(nAuthors)])})
			if kind == 7 {
				content = []string{"+", "+", "+", "🤙", "❤️", "-"}[r.IntN(6)]
			}
		}
		ev := event{
			id: randBytes(r, 32), pubkey: c.authors[a], createdAt: createdAt, kind: kind,
			coordinate: kind == 0 || kind == 3,
		}
		if kind == 1 {
			ids = append(ids, ev.id)
		}
		// raw: a Nostr event's JSON, as buzz stores it.
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":"%s","pubkey":"%s","created_at":%d,"kind":%d,"tags":[`, hexs(ev.id), hexs(ev.pubkey), createdAt, kind)
		for i, t := range tags {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('[')
			for j, s := range t {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Quote(s))
			}
			b.WriteByte(']')
		}
		fmt.Fprintf(&b, `],"content":%s,"sig":"%s"}`, strconv.Quote(content), hexs(randBytes(r, 64)))
		ev.raw = []byte(b.String())
		for _, t := range tags {
			if len(t) >= 2 && len(t[0]) == 1 {
				ev.tags = append(ev.tags, tagKV{t[0], t[1]})
			}
		}
		sort.Slice(ev.tags, func(i, j int) bool {
			if ev.tags[i].name != ev.tags[j].name {
				return ev.tags[i].name < ev.tags[j].name
			}
			return ev.tags[i].value < ev.tags[j].value
		})
		if len(ev.tags) > 1 {
			out := ev.tags[:1]
			for _, t := range ev.tags[1:] {
				if t != out[len(out)-1] {
					out = append(out, t)
				}
			}
			ev.tags = out
		}
		c.events = append(c.events, ev)
	}
	return c
}

// ---------- writer (mirrors buzz store/embedded/write.go) ----------

const maxTagRows = 16

type writer struct {
	conn                                     *sql.Conn
	begin, commit, tombstone, exists, insert *sql.Stmt
	watermark, head, indexFTS                *sql.Stmt
	tagStmts                                 [maxTagRows + 1]*sql.Stmt
	indexFrom                                int64
	noText                                   bool // -fts=false: no FTS5 insert
}

func newWriter(ctx context.Context, db *sql.DB) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{conn: conn}
	prep := func(dst **sql.Stmt, q string) {
		if err != nil {
			return
		}
		*dst, err = conn.PrepareContext(ctx, q)
		if err != nil {
			err = fmt.Errorf("prepare %q: %w", q, err)
		}
	}
	prep(&w.begin, `BEGIN IMMEDIATE`)
	prep(&w.commit, `COMMIT`)
	prep(&w.tombstone, `SELECT 1 FROM deleted_ids WHERE community = ? AND id = ? AND pubkey = ?`)
	prep(&w.exists, `SELECT 1 FROM events WHERE community = ? AND id = ?`)
	prep(&w.insert, `INSERT OR IGNORE INTO events (community, id, pubkey, created_at, kind, d_tag, expires_at, raw, channel)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`)
	prep(&w.watermark, `SELECT deleted_up_to FROM coord_deletions WHERE community = ? AND kind = ? AND pubkey = ? AND d_tag = ?`)
	prep(&w.head, `SELECT seq, created_at, id FROM events WHERE community = ? AND kind = ? AND pubkey = ? AND d_tag = ?`)
	prep(&w.indexFTS, `INSERT INTO events_fts (rowid, content)
		SELECT seq, json_extract(CAST(raw AS TEXT), '$.content') FROM events WHERE seq >= ? AND kind <> 1059`)
	for n := 1; n <= maxTagRows; n++ {
		q := `INSERT OR IGNORE INTO tags (community, name, value, created_at, event_seq) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?), `, n), ", ")
		prep(&w.tagStmts[n], q)
	}
	return w, err
}

const community = int64(1)

// save is buzz's writer.save for the kinds of this corpus (no deletions, no
// expirations, no channels): tombstone check, for replaceables the
// exists/watermark/head checks, insert … RETURNING seq, tag rows.
func (w *writer) save(ctx context.Context, p *event) error {
	var one int
	err := w.tombstone.QueryRowContext(ctx, community, p.id, p.pubkey).Scan(&one)
	if err == nil {
		return errors.New("deleted")
	} else if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var dTag any
	if p.coordinate {
		dTag = ""
		if err := w.exists.QueryRowContext(ctx, community, p.id).Scan(&one); !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("exists: %v", err)
		}
		var upTo int64
		if err := w.watermark.QueryRowContext(ctx, community, p.kind, p.pubkey, "").Scan(&upTo); !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("watermark: %v", err)
		}
		var hs, hc int64
		var hid []byte
		if err := w.head.QueryRowContext(ctx, community, p.kind, p.pubkey, "").Scan(&hs, &hc, &hid); !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("head: %v (corpus coordinates are unique)", err)
		}
	}
	var seq int64
	if err := w.insert.QueryRowContext(ctx, community, p.id, p.pubkey, p.createdAt, p.kind, dTag, nil, p.raw, nil).Scan(&seq); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	if w.indexFrom == 0 || seq < w.indexFrom {
		w.indexFrom = seq
	}
	args := make([]any, 0, 5*min(len(p.tags), maxTagRows))
	for rest := p.tags; len(rest) > 0; {
		n := min(len(rest), maxTagRows)
		args = args[:0]
		for _, t := range rest[:n] {
			args = append(args, community, t.name, t.value, p.createdAt, seq)
		}
		if _, err := w.tagStmts[n].ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("tags: %w", err)
		}
		rest = rest[n:]
	}
	return nil
}

func (w *writer) runBatch(ctx context.Context, batch []event) error {
	if _, err := w.begin.ExecContext(ctx); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	for i := range batch {
		if err := w.save(ctx, &batch[i]); err != nil {
			return err
		}
	}
	if w.indexFrom != 0 && w.noText {
		w.indexFrom = 0
	}
	if w.indexFrom != 0 {
		from := w.indexFrom
		w.indexFrom = 0
		if _, err := w.indexFTS.ExecContext(ctx, from); err != nil {
			return fmt.Errorf("fts: %w", err)
		}
	}
	if _, err := w.commit.ExecContext(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// ---------- measurement ----------

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func open(path string) (*sql.DB, error) {
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	for _, p := range pragmas {
		if _, err := db.Exec(p); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return db, nil
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", engine, err)
	os.Exit(1)
}

func main() {
	mode := flag.String("mode", "write", "write | read | info")
	path := flag.String("db", "/tmp/engine-eval-db/bench.sqlite3", "database file (write mode deletes and recreates it)")
	n := flag.Int("n", 20000, "events to insert")
	batch := flag.Int("batch", 8, "events per transaction")
	queries := flag.Int("q", 5000, "queries per read shape")
	seed := flag.Uint64("seed", 42, "corpus seed")
	cpuprofile := flag.String("cpuprofile", "", "write a Go CPU profile of the timed section")
	fts := flag.Bool("fts", true, "SQLite engines: index the text (FTS5) as buzz does; false measures the write path without it")
	sync := flag.Bool("sync", true, "key-value engines: sync every commit (false: acknowledge before the data is durable, as khatru's badger)")
	flag.Parse()
	ctx := context.Background()
	c := buildCorpus(*seed, *n)
	if isKV {
		kvMain(*mode, *path, c, *batch, *queries, *seed, *cpuprofile, *sync)
		return
	}

	switch *mode {
	case "info":
		dir, _ := os.MkdirTemp("", "engine-eval-info")
		defer os.RemoveAll(dir)
		db, err := open(dir + "/x.sqlite3")
		if err != nil {
			fatal(err)
		}
		var v string
		if err := db.QueryRow(`SELECT sqlite_version()`).Scan(&v); err != nil {
			fatal(err)
		}
		fmt.Printf("engine=%s sqlite_version=%s\n", engine, v)
		if _, err := db.Exec(schema); err != nil {
			fatal(fmt.Errorf("schema: %w", err))
		}
		var rowid int64
		if _, err := db.Exec(`INSERT INTO events_fts (rowid, content) VALUES (1, 'Café été naïve 日本 データ hello-world #nostr')`); err != nil {
			fatal(err)
		}
		for _, q := range []string{"cafe", "café", "nostr", "日本", "hello"} {
			err := db.QueryRow(`SELECT rowid FROM events_fts WHERE events_fts MATCH ?`, `"`+q+`"`).Scan(&rowid)
			fmt.Printf("  fts match %-6q -> %v\n", q, err == nil)
		}
		var nev int
		_ = db.QueryRow(`SELECT count(*) FROM events`).Scan(&nev)
		return

	case "write":
		_ = os.Remove(*path)
		_ = os.Remove(*path + "-wal")
		_ = os.Remove(*path + "-shm")
		db, err := open(*path)
		if err != nil {
			fatal(err)
		}
		if _, err := db.Exec(schema); err != nil {
			fatal(fmt.Errorf("schema: %w", err))
		}
		w, err := newWriter(ctx, db)
		if err != nil {
			fatal(err)
		}
		w.noText = !*fts
		var rawBytes, nTags int
		for _, e := range c.events {
			rawBytes += len(e.raw)
			nTags += len(e.tags)
		}
		var prof *os.File
		if *cpuprofile != "" {
			prof, _ = os.Create(*cpuprofile)
			_ = pprof.StartCPUProfile(prof)
		}
		c0, t0 := cpuNow(), time.Now()
		for i := 0; i < len(c.events); i += *batch {
			if err := w.runBatch(ctx, c.events[i:min(i+*batch, len(c.events))]); err != nil {
				fatal(err)
			}
		}
		cpu, wall := cpuNow()-c0, time.Since(t0)
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
		}
		var cnt, ntag, nfts int
		_ = w.conn.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&cnt)
		_ = w.conn.QueryRowContext(ctx, `SELECT count(*) FROM tags`).Scan(&ntag)
		_ = w.conn.QueryRowContext(ctx, `SELECT count(*) FROM events_fts_docsize`).Scan(&nfts)
		w.conn.Close()
		db.Close()
		st, _ := os.Stat(*path)
		fmt.Printf("engine=%s mode=write batch=%d n=%d cpu_us_per_event=%.1f wall_us_per_event=%.1f events=%d tags=%d fts_docs=%d avg_raw=%d tag_rows_in=%d db_bytes=%d\n",
			engine, *batch, len(c.events), float64(cpu.Microseconds())/float64(len(c.events)),
			float64(wall.Microseconds())/float64(len(c.events)), cnt, ntag, nfts, rawBytes/len(c.events), nTags, st.Size())

	case "read":
		db, err := open(*path)
		if err != nil {
			fatal(err)
		}
		if _, err := db.Exec(`PRAGMA query_only = 1`); err != nil {
			fatal(err)
		}
		shapes := []struct {
			name, q string
			arg     func(r *rand.Rand) any
		}{
			{"author", `SELECT raw FROM events WHERE community = 1 AND pubkey = ? AND kind = 1 ORDER BY created_at DESC, id LIMIT 20`,
				func(r *rand.Rand) any { return c.authors[r.IntN(len(c.authors))] }},
			{"tagwalk", `SELECT e.raw FROM tags t JOIN events e ON e.seq = t.event_seq WHERE t.community = 1 AND t.name = 't' AND t.value = ? ORDER BY t.created_at DESC LIMIT 20`,
				func(r *rand.Rand) any { return c.topics[r.IntN(len(c.topics))] }},
		}
		var out []string
		for _, s := range shapes {
			var plan []string
			rows, err := db.Query(`EXPLAIN QUERY PLAN `+s.q, s.arg(rand.New(rand.NewPCG(1, 2))))
			if err != nil {
				fatal(err)
			}
			for rows.Next() {
				var id, parent, notused int
				var detail string
				_ = rows.Scan(&id, &parent, &notused, &detail)
				plan = append(plan, detail)
			}
			rows.Close()
			st, err := db.Prepare(s.q)
			if err != nil {
				fatal(err)
			}
			r := rand.New(rand.NewPCG(*seed, 7))
			var nrows, nbytes int
			run := func(k int) {
				for range k {
					rows, err := st.Query(s.arg(r))
					if err != nil {
						fatal(err)
					}
					for rows.Next() {
						var raw []byte
						if err := rows.Scan(&raw); err != nil {
							fatal(err)
						}
						nrows++
						nbytes += len(raw)
					}
					if err := rows.Err(); err != nil {
						fatal(err)
					}
					rows.Close()
				}
			}
			run(200) // warm the page cache
			nrows, nbytes = 0, 0
			c0, t0 := cpuNow(), time.Now()
			run(*queries)
			cpu, wall := cpuNow()-c0, time.Since(t0)
			st.Close()
			fmt.Fprintf(os.Stderr, "%s plan %s: %s\n", engine, s.name, strings.Join(plan, " | "))
			out = append(out, fmt.Sprintf("%s_cpu_us=%.1f %s_wall_us=%.1f %s_rows_per_q=%.1f",
				s.name, float64(cpu.Microseconds())/float64(*queries), s.name, float64(wall.Microseconds())/float64(*queries),
				s.name, float64(nrows)/float64(*queries)))
			_ = nbytes
		}
		fmt.Printf("engine=%s mode=read q=%d %s\n", engine, *queries, strings.Join(out, " "))
		db.Close()
	default:
		fatal(fmt.Errorf("unknown mode %q", *mode))
	}
}
