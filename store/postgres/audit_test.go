package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"

	"github.com/buzzrelay/buzz/store/postgres"
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

type pgTamper struct{ url string }

func (p pgTamper) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, q, args...)
	if err != nil {
		t.Fatalf("tamper: %v", err)
	}
	if tag.RowsAffected() == 0 {
		t.Fatalf("tamper %q changed no row", q)
	}
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
//
//	go test ./store/postgres -run '^$' -bench BenchmarkAuditCost -benchtime 4000x
func BenchmarkAuditCost(b *testing.B) {
	storetest.RunAuditBenchmarks(b, func(b *testing.B, audit bool) storetest.AuditBackend {
		var opts []postgres.Option
		if !audit {
			opts = append(opts, postgres.WithoutAuditForBenchmark())
		}
		return openStore(b, opts...)
	})
}
