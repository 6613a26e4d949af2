package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

func TestAudit(t *testing.T) {
	storetest.RunAudit(t, func(t *testing.T) storetest.AuditBackend { return openStore(t) })
}

// TestAuditTamper edits audit rows as the database owner (bypassing the
// store and its RLS role) and checks that verification reports each edit.
func TestAuditTamper(t *testing.T) {
	var url string
	open := func(t *testing.T) storetest.AuditBackend {
		url = pgtest.NewDatabase(t)
		s, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	storetest.RunAuditTamper(t, open, func(storetest.AuditBackend) storetest.Tamperer { return pgTamper{url: url} })
}

// pgTamper changes the database as its owner, bypassing the store and
// its RLS role.
type pgTamper struct{ url string }

func (p pgTamper) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if p.run(t, q, args...) == 0 {
		t.Fatalf("tamper %q changed no row", q)
	}
}

// ddl runs a statement that changes no row.
func (p pgTamper) ddl(t testing.TB, q string) {
	t.Helper()
	p.run(t, q)
}

func (p pgTamper) run(t testing.TB, q string, args ...any) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, q, args...)
	if err != nil {
		t.Fatalf("as owner: %v", err)
	}
	return tag.RowsAffected()
}

func (p pgTamper) UpdateDetail(t *testing.T, c tenant.CommunityID, seq int64) {
	p.exec(t, `UPDATE audit_log SET detail = '{"i": 99}' WHERE community_id = $1 AND seq = $2`, c.UUID(), seq)
}

func (p pgTamper) Delete(t *testing.T, c tenant.CommunityID, seq int64) {
	p.exec(t, `DELETE FROM audit_log WHERE community_id = $1 AND seq = $2`, c.UUID(), seq)
}

func (p pgTamper) Swap(t *testing.T, c tenant.CommunityID, a, b int64) {
	// Through a free seq, as the primary key forbids a transient duplicate.
	p.exec(t, `UPDATE audit_log SET seq = -1 WHERE community_id = $1 AND seq = $2`, c.UUID(), a)
	p.exec(t, `UPDATE audit_log SET seq = $3 WHERE community_id = $1 AND seq = $2`, c.UUID(), b, a)
	p.exec(t, `UPDATE audit_log SET seq = $2 WHERE community_id = $1 AND seq = -1`, c.UUID(), b)
}

// BenchmarkAuditCost: ingest of audited writes with auditing on and off.
// Off, the store runs as in production and the database discards every
// row queued into audit_outbox (a rule installed as the database owner),
// so neither the queueing nor the linking into chains is done: what is
// measured is the database's audit work, the store's own (building the
// entry) being left in.
//
//	go test ./store/postgres -run '^$' -bench BenchmarkAuditCost -benchtime 4000x
func BenchmarkAuditCost(b *testing.B) {
	storetest.RunAuditBenchmarks(b, func(b *testing.B, audited bool) storetest.AuditBackend {
		url := pgtest.NewDatabase(b)
		s, err := postgres.Open(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if !audited {
			pgTamper{url: url}.ddl(b, `CREATE RULE bench_audit_off AS ON INSERT TO audit_outbox DO INSTEAD NOTHING`)
		}
		return s
	})
}

// TestAuditAcrossProcesses: two stores on one database (two buzzd
// processes) append to the same community at once; the chain stays
// gapless and verifies, and each store reads the other's entries at once
// (reading links what is queued, whichever process queued it).
func TestAuditAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	var stores [2]*postgres.Store
	for i := range stores {
		s, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	c := storetest.Community(t, stores[0], "shared.example")
	const each = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for i, s := range stores {
		for j := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.AppendAudit(ctx, c, audit.Record{Action: "pod", Object: fmt.Sprintf("%d-%d", i, j)})
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range stores {
		es := storetest.AuditChain(t, s, c)
		if len(es) != 2*each {
			t.Fatalf("store %d reads %d entries, want %d", i, len(es), 2*each)
		}
		if rep, err := store.VerifyAudit(ctx, s, c); err != nil || rep.BrokenSeq != 0 || rep.Entries != 2*each {
			t.Fatalf("store %d: %+v %v", i, rep, err)
		}
	}
}

// TestAuditOutboxRecovery: an entry committed to the outbox by a process
// that died before linking it is linked by the next store's SyncAudit (and
// its start-up rescan), in order after the existing chain.
func TestAuditOutboxRecovery(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	c := storetest.Community(t, s, "crash.example")
	if err := s.AppendAudit(ctx, c, audit.Record{Action: "before"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncAudit(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The "crashed" process's committed, unlinked entry.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO audit_outbox (community_id, action, object_id, detail, created_at)
VALUES ($1, 'orphan', 'x', '{"b": 2, "a": 1}', now())`, c.UUID()); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	s2, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	if err := s2.SyncAudit(ctx); err != nil {
		t.Fatal(err)
	}
	es := storetest.AuditChain(t, s2, c)
	if len(es) != 2 || es[0].Action != "before" || es[1].Action != "orphan" || string(es[1].Detail) != `{"a":1,"b":2}` {
		t.Fatalf("chain %+v", es)
	}
	if rep, err := store.VerifyAudit(ctx, s2, c); err != nil || rep.BrokenSeq != 0 {
		t.Fatalf("%+v %v", rep, err)
	}
}
