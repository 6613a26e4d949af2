package lsm

import "github.com/cockroachdb/pebble/v2/vfs"

// WithFS opens the store on fs (tests wrap the disk to hold syncs back).
func WithFS(fs vfs.FS) Option {
	return func(c *config) error {
		c.fs = fs
		return nil
	}
}
