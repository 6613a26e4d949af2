//go:build badger

package main

import (
	"database/sql"
	"errors"

	"github.com/dgraph-io/badger/v4"
)

const engine = "badger"

func openDB(string) (*sql.DB, error) { return nil, errors.New("badger is not a SQL engine") }

const isKV = true

// badgerDB is badger v4 (the engine of khatru's default store) with
// SyncWrites on, so that a commit is durable when it returns, unless
// -sync=false (badger's default, and khatru's).
type badgerDB struct{ db *badger.DB }

func openKV(path string, sync bool) (kvDB, error) {
	db, err := badger.Open(badger.DefaultOptions(path).WithSyncWrites(sync).WithLogger(nil))
	if err != nil {
		return nil, err
	}
	return &badgerDB{db: db}, nil
}

type badgerTx struct{ txn *badger.Txn }

func (d *badgerDB) begin() (kvTx, error) { return &badgerTx{txn: d.db.NewTransaction(true)}, nil }

func (t *badgerTx) get(k []byte) ([]byte, bool, error) {
	item, err := t.txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	v, err := item.ValueCopy(nil)
	return v, true, err
}

func (t *badgerTx) set(k, v []byte) error { return t.txn.Set(k, v) }

func (t *badgerTx) commit() error { return t.txn.Commit() }

func (d *badgerDB) get(k []byte) (out []byte, ok bool, err error) {
	err = d.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		out, err = item.ValueCopy(nil)
		ok = err == nil
		return err
	})
	return out, ok, err
}

func (d *badgerDB) scan(prefix []byte, fn func([]byte) bool) error {
	return d.db.View(func(txn *badger.Txn) error {
		opt := badger.DefaultIteratorOptions
		opt.PrefetchValues = false
		opt.Prefix = prefix
		it := txn.NewIterator(opt)
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			if !fn(it.Item().Key()) {
				break
			}
		}
		return nil
	})
}

func (d *badgerDB) close() error { return d.db.Close() }
