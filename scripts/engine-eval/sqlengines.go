//go:build !pebble && !bbolt && !badger

package main

import "errors"

const isKV = false

func openKV(string, bool) (kvDB, error) {
	return nil, errors.New(engine + " is not a key-value engine")
}
