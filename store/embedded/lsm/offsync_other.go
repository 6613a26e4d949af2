//go:build !linux || !cgo

package lsm

import "github.com/cockroachdb/pebble/v2/vfs"

// offPSyncFS is fs itself without cgo on Linux: the log's syncs hold their
// P (see offsync_cgo.go).
func offPSyncFS(fs vfs.FS) vfs.FS { return fs }
