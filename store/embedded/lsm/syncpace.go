package lsm

import (
	"sync/atomic"
	"time"
)

// syncPacer is pebble's least interval between two syncs of the
// write-ahead log (WALMinSyncInterval), asked for again after every sync:
// the configured interval while more than one save waits for a sync (the
// saves arriving during the interval share the next one), none while at
// most one does (a lone writer's next save syncs at once).
//
// Pebble keeps the interval with a Go timer, which on an idle P fires only
// when the runtime next polls the network: a millisecond or more late. A
// lone writer with no other traffic found the timer armed at every save
// and waited for it, 1.5 ms a save against 0.3 ms without the interval
// (BenchmarkStore/InsertSingle). A relay's lone connection hardly did: its
// next event wakes the runtime, which then fires the timer.
type syncPacer struct {
	min     time.Duration
	waiting atomic.Int64 // saves in durable
}

// interval is WALMinSyncInterval. Pebble asks for it right after a sync,
// once it has told that sync's saves: usually they are still counted as
// waiting, but one may have returned already, and then a sync that
// released two saves is followed by the next at once. That costs the next
// sync some company, never durability; under load many saves wait and the
// interval holds.
func (p *syncPacer) interval() time.Duration {
	if p.waiting.Load() > 1 {
		return p.min
	}
	return 0
}
