//go:build !linux

package lsm

import "github.com/cockroachdb/pebble/v2/vfs"

// sizedLogFS is fs itself where fallocate is not available.
func sizedLogFS(fs vfs.FS) vfs.FS { return fs }
