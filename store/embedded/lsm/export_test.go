package lsm

import (
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// WithFS opens the store on fs (tests wrap the disk to hold syncs back).
func WithFS(fs vfs.FS) Option {
	return func(c *config) error {
		c.fs = fs
		return nil
	}
}

// SyncInterval is the least interval pebble would now keep before the
// log's next sync (syncPacer).
func (s *Store) SyncInterval() time.Duration { return s.pacer.interval() }
