package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

type auditStore interface {
	store.Backend
	store.AuditLog
}

// TestAuditVerifyCommand runs "buzzd audit verify" on both backends: intact
// chains pass (exit 0); after a stored entry is altered behind the store's
// back the command prints that community's first broken seq and exits 1,
// while the other community still verifies.
func TestAuditVerifyCommand(t *testing.T) {
	type backend struct {
		name   string
		env    map[string]string
		open   func(t *testing.T) auditStore
		tamper func(t *testing.T, c tenant.CommunityID, seq int64)
	}
	dir := t.TempDir()
	pgURL := pgtest.NewDatabase(t)
	backends := []backend{
		{
			name: "sqlite", env: map[string]string{"BUZZ_DATA_DIR": dir},
			open: func(t *testing.T) auditStore {
				s, err := embedded.Open(context.Background(), dir)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			tamper: func(t *testing.T, c tenant.CommunityID, seq int64) {
				tamperSQLite(t, dir, c, seq)
			},
		},
		{
			name: "postgres", env: map[string]string{"DATABASE_URL": pgURL},
			open: func(t *testing.T) auditStore {
				s, err := postgres.Open(context.Background(), pgURL)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			tamper: func(t *testing.T, c tenant.CommunityID, seq int64) {
				ctx := context.Background()
				conn, err := pgx.Connect(ctx, pgURL)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				if _, err := conn.Exec(ctx, `UPDATE audit_log SET action = 'forged' WHERE community_id = $1 AND seq = $2`, c.UUID(), seq); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			st := b.open(t)
			var ids []tenant.CommunityID
			for _, h := range []string{"a.example", "b.example"} {
				id, _, err := st.EnsureCommunity(ctx, h)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 3 {
					if err := st.AppendAudit(ctx, id, audit.Record{Action: "test", Object: fmt.Sprint(i)}); err != nil {
						t.Fatal(err)
					}
				}
				ids = append(ids, id)
			}
			st.Close()

			verify := func(args ...string) (string, error) {
				var out bytes.Buffer
				err := run(ctx, append([]string{"audit", "verify"}, args...), envMap(b.env), nil, &out, io.Discard)
				return out.String(), err
			}
			out, err := verify("-all")
			if err != nil || strings.Count(out, ": ok, 3 entries") != 2 {
				t.Fatalf("intact chains: %v\n%s", err, out)
			}

			b.tamper(t, ids[1], 2)
			out, err = verify("-all")
			var broken auditBrokenError
			if !errors.As(err, &broken) || exitCode(err, io.Discard) != 1 {
				t.Fatalf("after tampering: err %v\n%s", err, out)
			}
			want := fmt.Sprintf("community %s: BROKEN at seq 2", ids[1])
			if !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("community %s: ok, 3 entries", ids[0])) {
				t.Fatalf("output lacks %q or the intact community:\n%s", want, out)
			}
			if out, err := verify("-host", "A.example"); err != nil || !strings.Contains(out, ids[0].String()+": ok") || strings.Contains(out, ids[1].String()) {
				t.Fatalf("-host a.example: %v\n%s", err, out)
			}
			if _, err := verify("-host=b.example"); !errors.As(err, &broken) {
				t.Fatalf("-host b.example: %v", err)
			}
			if _, err := verify("-host", "nobody.example"); err == nil || errors.As(err, &broken) {
				t.Fatalf("unknown host: %v", err)
			}
			for _, bad := range [][]string{nil, {"-all", "-host", "a.example"}, {"-host"}} {
				var ue usageError
				if _, err := verify(bad...); !errors.As(err, &ue) {
					t.Errorf("verify %v: %v, want a usage error", bad, err)
				}
			}
		})
	}
}

func tamperSQLite(t *testing.T, dir string, c tenant.CommunityID, seq int64) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, embedded.DefaultFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u := c.UUID()
	res, err := db.Exec(`UPDATE audit_log SET action = 'forged' WHERE community = (SELECT seq FROM communities WHERE id = ?) AND seq = ?`, u[:], seq)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tampered %d rows", n)
	}
}
