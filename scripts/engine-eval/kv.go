package main

// The key-value side of the evaluation: buzz's write path and the two read
// shapes over an ordered key-value engine with our own indexes, the
// alternative worth measuring ("an LSM or B-tree key-value engine such as
// pebble or bbolt with our own indexes"). Each index is a key prefix; values
// are empty except the event (raw JSON under its sequence number) and the
// id and coordinate lookups (the sequence number). created_at is stored
// inverted so that a forward scan yields newest first, as the SQLite
// indexes' "created_at DESC". There is no tags_event index: deleting an
// event re-derives its tag keys from its raw JSON. There is no text index
// (SQLite's FTS5 has no counterpart here; -fts=false measures SQLite without
// it for a like-for-like row).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strings"
	"time"
)

// kvTx is one write transaction. get sees the transaction's own writes;
// commit makes it durable (synced) before it returns.
type kvTx interface {
	get(key []byte) (val []byte, ok bool, err error)
	set(key, val []byte) error
	commit() error
}

// kvDB is an engine: write transactions, and reads for the query shapes.
type kvDB interface {
	begin() (kvTx, error)
	get(key []byte) ([]byte, bool, error)
	// scan calls fn for the keys with prefix in order until fn returns false.
	scan(prefix []byte, fn func(key []byte) bool) error
	close() error
}

const (
	pRaw     = 'r' // seq → raw
	pID      = 'i' // community, id → seq
	pTime    = 't' // community, ^created_at, seq
	pKind    = 'k' // community, kind, ^created_at, seq
	pAuthor  = 'a' // community, pubkey, kind, ^created_at, seq
	pCoord   = 'c' // community, kind, pubkey, d → seq
	pTag     = 'g' // community, name, value, 0, ^created_at, seq
	pDeleted = 'd' // community, id, pubkey
	pWater   = 'w' // community, kind, pubkey, d → deleted_up_to
	pSeq     = 's' // the last sequence number
)

type key []byte

func newKey(p byte) key                { return key{p} }
func (k key) u64(v uint64) key         { return binary.BigEndian.AppendUint64(k, v) }
func (k key) u32(v uint32) key         { return binary.BigEndian.AppendUint32(k, v) }
func (k key) bytes(b []byte) key       { return append(k, b...) }
func (k key) str(s string) key         { return append(append(k, s...), 0) }
func (k key) desc(createdAt int64) key { return k.u64(^uint64(createdAt)) }

type kvWriter struct {
	db  kvDB
	seq uint64
}

func (w *kvWriter) save(tx kvTx, p *event) error {
	c := uint64(community)
	if _, ok, err := tx.get(newKey(pDeleted).u64(c).bytes(p.id).bytes(p.pubkey)); err != nil {
		return err
	} else if ok {
		return errors.New("deleted")
	}
	idKey := newKey(pID).u64(c).bytes(p.id)
	if _, ok, err := tx.get(idKey); err != nil {
		return err
	} else if ok {
		return nil // duplicate: INSERT OR IGNORE
	}
	var coordKey key
	if p.coordinate {
		if _, ok, err := tx.get(newKey(pWater).u64(c).u32(uint32(p.kind)).bytes(p.pubkey).str("")); err != nil || ok {
			return fmt.Errorf("watermark: %v %v", ok, err)
		}
		coordKey = newKey(pCoord).u64(c).u32(uint32(p.kind)).bytes(p.pubkey).str("")
		if _, ok, err := tx.get(coordKey); err != nil || ok {
			return fmt.Errorf("head: %v %v (corpus coordinates are unique)", ok, err)
		}
	}
	w.seq++
	seq := binary.BigEndian.AppendUint64(nil, w.seq)
	set := func(k key, v []byte) error { return tx.set(k, v) }
	if err := set(newKey(pRaw).u64(w.seq), p.raw); err != nil {
		return err
	}
	if err := set(idKey, seq); err != nil {
		return err
	}
	if err := set(newKey(pTime).u64(c).desc(p.createdAt).u64(w.seq), nil); err != nil {
		return err
	}
	if err := set(newKey(pKind).u64(c).u32(uint32(p.kind)).desc(p.createdAt).u64(w.seq), nil); err != nil {
		return err
	}
	if err := set(newKey(pAuthor).u64(c).bytes(p.pubkey).u32(uint32(p.kind)).desc(p.createdAt).u64(w.seq), nil); err != nil {
		return err
	}
	if coordKey != nil {
		if err := set(coordKey, seq); err != nil {
			return err
		}
	}
	for _, t := range p.tags {
		if err := set(newKey(pTag).u64(c).str(t.name).str(t.value).desc(p.createdAt).u64(w.seq), nil); err != nil {
			return err
		}
	}
	return nil
}

func (w *kvWriter) runBatch(batch []event) error {
	tx, err := w.db.begin()
	if err != nil {
		return err
	}
	for i := range batch {
		if err := w.save(tx, &batch[i]); err != nil {
			return err
		}
	}
	if err := tx.set(newKey(pSeq), binary.BigEndian.AppendUint64(nil, w.seq)); err != nil {
		return err
	}
	return tx.commit()
}

func dirBytes(path string) int64 {
	var n int64
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !fi.IsDir() {
			n += fi.Size()
		}
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		n = fi.Size()
	}
	return n
}

func kvMain(mode, path string, c *corpus, batch, queries int, seed uint64, cpuprofile string, kvSync bool) {
	switch mode {
	case "write":
		_ = os.RemoveAll(path)
		db, err := openKV(path, kvSync)
		if err != nil {
			fatal(err)
		}
		w := &kvWriter{db: db}
		var rawBytes, nTags int
		for _, e := range c.events {
			rawBytes += len(e.raw)
			nTags += len(e.tags)
		}
		var prof *os.File
		if cpuprofile != "" {
			prof, _ = os.Create(cpuprofile)
			_ = pprof.StartCPUProfile(prof)
		}
		c0, t0 := cpuNow(), time.Now()
		for i := 0; i < len(c.events); i += batch {
			if err := w.runBatch(c.events[i:min(i+batch, len(c.events))]); err != nil {
				fatal(err)
			}
		}
		cpu, wall := cpuNow()-c0, time.Since(t0)
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
		}
		var cnt, ntag int
		_ = db.scan([]byte{pRaw}, func([]byte) bool { cnt++; return true })
		_ = db.scan([]byte{pTag}, func([]byte) bool { ntag++; return true })
		if err := db.close(); err != nil {
			fatal(err)
		}
		fmt.Printf("engine=%s mode=write batch=%d n=%d cpu_us_per_event=%.1f wall_us_per_event=%.1f events=%d tags=%d fts_docs=0 avg_raw=%d tag_rows_in=%d db_bytes=%d\n",
			engine, batch, len(c.events), float64(cpu.Microseconds())/float64(len(c.events)),
			float64(wall.Microseconds())/float64(len(c.events)), cnt, ntag, rawBytes/len(c.events), nTags, dirBytes(path))

	case "read":
		db, err := openKV(path, kvSync)
		if err != nil {
			fatal(err)
		}
		shapes := []struct {
			name   string
			prefix func(r *rand.Rand) key
		}{
			{"author", func(r *rand.Rand) key {
				return newKey(pAuthor).u64(uint64(community)).bytes(c.authors[r.IntN(len(c.authors))]).u32(1)
			}},
			{"tagwalk", func(r *rand.Rand) key {
				return newKey(pTag).u64(uint64(community)).str("t").str(c.topics[r.IntN(len(c.topics))])
			}},
		}
		var out []string
		for _, s := range shapes {
			r := rand.New(rand.NewPCG(seed, 7))
			var nrows int
			run := func(k int) {
				for range k {
					var seqs []uint64
					p := s.prefix(r)
					if err := db.scan(p, func(k []byte) bool {
						seqs = append(seqs, binary.BigEndian.Uint64(k[len(k)-8:]))
						return len(seqs) < 20
					}); err != nil {
						fatal(err)
					}
					for _, q := range seqs {
						if _, ok, err := db.get(newKey(pRaw).u64(q)); err != nil || !ok {
							fatal(fmt.Errorf("raw %d: %v %v", q, ok, err))
						}
						nrows++
					}
				}
			}
			run(200)
			nrows = 0
			c0, t0 := cpuNow(), time.Now()
			run(queries)
			cpu, wall := cpuNow()-c0, time.Since(t0)
			out = append(out, fmt.Sprintf("%s_cpu_us=%.1f %s_wall_us=%.1f %s_rows_per_q=%.1f",
				s.name, float64(cpu.Microseconds())/float64(queries), s.name, float64(wall.Microseconds())/float64(queries),
				s.name, float64(nrows)/float64(queries)))
		}
		if st, ok := db.(fmt.Stringer); ok {
			fmt.Fprintln(os.Stderr, st.String())
		}
		fmt.Printf("engine=%s mode=read q=%d %s\n", engine, queries, strings.Join(out, " "))
		if err := db.close(); err != nil {
			fatal(err)
		}
	default:
		fatal(fmt.Errorf("unknown mode %q", mode))
	}
}

// prefixEnd is the smallest key after every key with prefix.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
