package workflow

// Halt simulates the engine's process dying: it stops claiming and
// heartbeating, abandons its runs without releasing their leases (they
// lapse), and publishes nothing more.
func (e *Engine) Halt() {
	e.runMu.Lock()
	e.halted = true
	e.runMu.Unlock()
	e.heldMu.Lock()
	for _, h := range e.held {
		h.cancel()
	}
	e.heldMu.Unlock()
}
