//go:build pebble

package main

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

const engine = "pebble"

func openDB(string) (*sql.DB, error) { return nil, errors.New("pebble is not a SQL engine") }

const isKV = true

// pebbleDB is pebble (CockroachDB's LSM) with default options; a commit is
// pebble.Sync (the WAL fsynced before Commit returns) unless -sync=false.
type pebbleDB struct {
	db   *pebble.DB
	sync bool
}

func openKV(path string, sync bool) (kvDB, error) {
	// A block cache the size of the SQLite engines' page cache (cache_size
	// -32000) instead of pebble's 8 MiB default; pebble's own log discarded.
	cache := pebble.NewCache(32 << 20)
	defer cache.Unref()
	db, err := pebble.Open(path, &pebble.Options{Cache: cache, Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	return &pebbleDB{db: db, sync: sync}, nil
}

type pebbleTx struct {
	b    *pebble.Batch
	sync bool
}

func (d *pebbleDB) begin() (kvTx, error) {
	return &pebbleTx{b: d.db.NewIndexedBatch(), sync: d.sync}, nil
}

func (t *pebbleTx) get(k []byte) ([]byte, bool, error) { return pebbleGet(t.b, k) }

func (t *pebbleTx) set(k, v []byte) error { return t.b.Set(k, v, nil) }

func (t *pebbleTx) commit() error {
	opt := pebble.NoSync
	if t.sync {
		opt = pebble.Sync
	}
	if err := t.b.Commit(opt); err != nil {
		return err
	}
	return t.b.Close()
}

func (d *pebbleDB) get(k []byte) ([]byte, bool, error) { return pebbleGet(d.db, k) }

// pebbleGet reads k from r (the database, or an indexed batch over it,
// which sees its own writes) and copies the value out.
func pebbleGet(r pebble.Reader, k []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

func (d *pebbleDB) scan(prefix []byte, fn func([]byte) bool) error {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if !fn(it.Key()) {
			break
		}
	}
	return it.Close()
}

func (d *pebbleDB) close() error { return d.db.Close() }

func (d *pebbleDB) String() string { return d.db.Metrics().String() }

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	fatal(fmt.Errorf(format, args...))
}
