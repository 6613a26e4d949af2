package workflow

import "time"

// SetClock replaces the engine's clock (the scheduler's "now").
func (e *Engine) SetClock(now func() time.Time) { e.now = now }
