package channel

// WaitCache lets tests read their own cache writes (ristretto applies
// them asynchronously).
func (a *Access) WaitCache() { a.cache.Wait() }
