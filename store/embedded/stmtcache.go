package embedded

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCacheSize bounds how many distinct read statements stay prepared.
// Query text depends only on a filter's shape (which fields it sets and
// how many values each list holds, rounded up; see padTo), so a relay's
// traffic needs a few dozen.
const stmtCacheSize = 256

// stmtCache keeps the read statements prepared, keyed by their SQL text.
// A *sql.Stmt of the read pool is prepared once per pool connection (by
// database/sql, on first use there) and then reused: compiling the SQL was
// about a quarter of a REQ's CPU before the cache.
type stmtCache struct {
	db *sql.DB

	mu   sync.Mutex
	m    map[string]*cachedStmt
	tick uint64 // advances on every hit; the entry with the oldest tick is evicted
}

type cachedStmt struct {
	st   *sql.Stmt
	used uint64
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: make(map[string]*cachedStmt)}
}

// get returns the prepared statement for query, preparing it if needed. The
// statement stays valid until close, even if it is evicted meanwhile
// (database/sql finalizes an evicted statement once its last rows close).
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	if e, ok := c.m[query]; ok {
		c.tick++
		e.used = c.tick
		c.mu.Unlock()
		return e.st, nil
	}
	c.mu.Unlock()

	// Prepare outside the lock: another REQ must not wait for this compile.
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	if e, ok := c.m[query]; ok { // prepared concurrently: keep the first
		e.used = c.tick
		_ = st.Close()
		return e.st, nil
	}
	if len(c.m) >= stmtCacheSize {
		c.evictOldest()
	}
	c.m[query] = &cachedStmt{st: st, used: c.tick}
	return st, nil
}

// evictOldest closes the least recently used statement. Eviction is rare
// (the cache holds every shape a relay normally sees), so a scan is fine.
func (c *stmtCache) evictOldest() {
	var (
		oldestKey string
		oldest    *cachedStmt
	)
	for k, e := range c.m {
		if oldest == nil || e.used < oldest.used {
			oldestKey, oldest = k, e
		}
	}
	if oldest != nil {
		delete(c.m, oldestKey)
		_ = oldest.st.Close()
	}
}

// close closes every cached statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for k, e := range c.m {
		if err := e.st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.m, k)
	}
	return first
}

// padTo returns the list length a query is written for when it binds n
// values: n rounded up to a power of two (at least 2). Unused slots are bound
// to NULL, which matches nothing, so "x IN (a, b, c, NULL)" selects exactly
// what "x IN (a, b, c)" does while lists of 3 and 4 values share one
// prepared statement.
func padTo(n int) int {
	p := 2
	for p < n {
		p *= 2
	}
	return p
}
