//go:build modernc

package main

import (
	"database/sql"

	_ "modernc.org/sqlite"
)

const engine = "modernc"

func openDB(path string) (*sql.DB, error) { return sql.Open("sqlite", "file:"+path) }
