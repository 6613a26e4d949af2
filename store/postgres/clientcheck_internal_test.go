package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// TestOrphanedBackendEnds checks that a backend of the store's pool stops
// a statement whose client went away without cancelling it: a read of the
// events table waits on a lock another session holds, the client's socket
// is closed with no cancel request (as when the request reached the
// backend before the statement did), and the backend must end within a
// few check intervals instead of waiting as long as the lock is held.
func TestOrphanedBackendEnds(t *testing.T) {
	ctx := context.Background()
	s := internalStore(t)
	holder, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var holderPID uint32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holderPID); err != nil {
		t.Fatal(err)
	}

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var interval string
	if err := conn.QueryRow(ctx, `SHOW client_connection_check_interval`).Scan(&interval); err != nil {
		t.Fatal(err)
	}
	if interval != clientCheckInterval {
		t.Fatalf("pool connection: client_connection_check_interval %q, want %q", interval, clientCheckInterval)
	}
	pid := conn.Conn().PgConn().PID()
	// Take the connection out of the pool and out of pgx, which would send
	// a cancel request when the socket closes, and send the read by hand.
	hc, err := conn.Hijack().PgConn().Hijack()
	if err != nil {
		t.Fatal(err)
	}
	hc.Frontend.Send(&pgproto3.Query{String: `SELECT count(*) FROM events`})
	if err := hc.Frontend.Flush(); err != nil {
		t.Fatal(err)
	}
	raw := hc.Conn

	blocked := func() bool {
		var n int
		if err := holder.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND $2 = ANY (pg_blocking_pids(pid))`,
			pid, holderPID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	for deadline := time.Now().Add(10 * time.Second); !blocked(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the read never waited on the lock")
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); blocked(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("backend still waiting on the lock 15 s after its client's socket closed")
		}
	}
}
