//go:build bbolt

package main

import (
	"bytes"
	"database/sql"
	"errors"

	bolt "go.etcd.io/bbolt"
)

const engine = "bbolt"

func openDB(string) (*sql.DB, error) { return nil, errors.New("bbolt is not a SQL engine") }

const isKV = true

var bucket = []byte("buzz")

// boltDB is bbolt (a copy-on-write B+tree in one file, one writer): one
// bucket, the keys prefixed as in kv.go; Commit fdatasyncs unless
// -sync=false (NoSync).
type boltDB struct{ db *bolt.DB }

func openKV(path string, sync bool) (kvDB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: !sync, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }); err != nil {
		return nil, err
	}
	return &boltDB{db: db}, nil
}

type boltTx struct {
	tx *bolt.Tx
	b  *bolt.Bucket
}

func (d *boltDB) begin() (kvTx, error) {
	tx, err := d.db.Begin(true)
	if err != nil {
		return nil, err
	}
	return &boltTx{tx: tx, b: tx.Bucket(bucket)}, nil
}

func (t *boltTx) get(k []byte) ([]byte, bool, error) {
	v := t.b.Get(k)
	return v, v != nil, nil
}

func (t *boltTx) set(k, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	return t.b.Put(k, v)
}

func (t *boltTx) commit() error { return t.tx.Commit() }

func (d *boltDB) get(k []byte) (out []byte, ok bool, err error) {
	err = d.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucket).Get(k); v != nil {
			out, ok = append([]byte(nil), v...), true
		}
		return nil
	})
	return out, ok, err
}

func (d *boltDB) scan(prefix []byte, fn func([]byte) bool) error {
	return d.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if !fn(k) {
				break
			}
		}
		return nil
	})
}

func (d *boltDB) close() error { return d.db.Close() }
