package embedded_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
)

func TestAudit(t *testing.T) {
	storetest.RunAudit(t, func(t *testing.T) storetest.AuditBackend { return openTemp(t) })
}

// TestAuditTamper edits audit rows through a second connection to the
// database file and checks that verification reports each edit.
func TestAuditTamper(t *testing.T) {
	var dir string
	open := func(t *testing.T) storetest.AuditBackend {
		dir = t.TempDir()
		s, err := embedded.Open(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	storetest.RunAuditTamper(t, open, func(storetest.AuditBackend) storetest.Tamperer {
		return sqliteTamper{path: filepath.Join(dir, embedded.DefaultFileName)}
	})
}

type sqliteTamper struct{ path string }

func (s sqliteTamper) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+s.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("tamper: %v", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatalf("tamper %q changed no row", q)
	}
}

const communityOf = `(SELECT seq FROM communities WHERE id = ?)`

func (s sqliteTamper) UpdateDetail(t *testing.T, c tenant.CommunityID, seq int64) {
	u := c.UUID()
	s.exec(t, `UPDATE audit_log SET detail = '{"i":99}' WHERE community = `+communityOf+` AND seq = ?`, u[:], seq)
}

func (s sqliteTamper) Delete(t *testing.T, c tenant.CommunityID, seq int64) {
	u := c.UUID()
	s.exec(t, `DELETE FROM audit_log WHERE community = `+communityOf+` AND seq = ?`, u[:], seq)
}

func (s sqliteTamper) Swap(t *testing.T, c tenant.CommunityID, a, b int64) {
	u := c.UUID()
	// Through a free seq: the primary key forbids a transient duplicate.
	s.exec(t, `UPDATE audit_log SET seq = -1 WHERE community = `+communityOf+` AND seq = ?`, u[:], a)
	s.exec(t, `UPDATE audit_log SET seq = ? WHERE community = `+communityOf+` AND seq = ?`, a, u[:], b)
	s.exec(t, `UPDATE audit_log SET seq = ? WHERE community = `+communityOf+` AND seq = -1`, b, u[:])
}

// BenchmarkAuditCost: ingest of audited writes with auditing on and off.
// Off, the store runs as in production and the database discards every
// row appended to audit_log (a BEFORE INSERT trigger raising IGNORE,
// created on the store's database file through a connection of the
// benchmark's own), so the writing of the chain is not done: what is
// measured is the database's audit work, the store's own (building and
// hashing the entry, reading the chain's head, here of an empty chain)
// being left in.
//
//	go test ./store/embedded -run '^$' -bench BenchmarkAuditCost -benchtime 4000x
func BenchmarkAuditCost(b *testing.B) {
	storetest.RunAuditBenchmarks(b, func(b *testing.B, audited bool) storetest.AuditBackend {
		dir := b.TempDir()
		s, err := embedded.Open(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if !audited {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, embedded.DefaultFileName)+"?_pragma=busy_timeout(5000)")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TRIGGER bench_audit_off BEFORE INSERT ON audit_log BEGIN SELECT RAISE(IGNORE); END`); err != nil {
				b.Fatal(err)
			}
		}
		return s
	})
}
