//go:build ncruces

package main

import (
	"database/sql"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
)

const engine = "ncruces"

// FTS5 is not built in: it is a separate wasm2go module registered per
// connection. Build with -tags ncruces,nofts5 to see what happens without it.
func openDB(path string) (*sql.DB, error) {
	if noFTS5 {
		return driver.Open("file:" + path)
	}
	return driver.Open("file:"+path, func(c *sqlite3.Conn) error { return fts5.Register(c) })
}
