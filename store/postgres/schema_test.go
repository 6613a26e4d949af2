package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

// TestSchemaLint fails when a table outside _operator_global_tables lacks
// community_id NOT NULL, has a primary key or unique index not led by
// community_id, or (for non-partition tables) lacks forced row-level
// security with the restrictive tenant policy; and when the RLS role can
// reach a partition directly (which would bypass the parent's policies).
func TestSchemaLint(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, v := range lintSchema(t, conn) {
		t.Error(v)
	}
}

// lintSchema returns the schema's tenancy violations.
func lintSchema(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	rows, err := conn.Query(ctx, `
SELECT c.relname, c.relispartition, c.relrowsecurity, c.relforcerowsecurity,
       coalesce((SELECT a.attnotnull FROM pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attname = 'community_id' AND NOT a.attisdropped), false),
       coalesce((SELECT a.attnum FROM pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attname = 'community_id' AND NOT a.attisdropped), 0),
       EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND NOT p.polpermissive
               AND pg_get_expr(p.polqual, p.polrelid) LIKE '%community_id%current_setting(''buzz.community_id''%'),
       has_table_privilege('buzz_app', c.oid, 'SELECT')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
  AND c.relname NOT IN (SELECT table_name FROM _operator_global_tables)
ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	type table struct {
		name                      string
		partition, rls, forced    bool
		notNull                   bool
		attnum                    int16
		restrictive, appCanSelect bool
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (table, error) {
		var tb table
		err := r.Scan(&tb.name, &tb.partition, &tb.rls, &tb.forced, &tb.notNull, &tb.attnum, &tb.restrictive, &tb.appCanSelect)
		return tb, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 10 {
		t.Fatalf("only %d tenant tables found; the lint query is broken", len(tables))
	}
	for _, tb := range tables {
		if !tb.notNull {
			out = append(out, fmt.Sprintf("%s: no community_id NOT NULL column (register deliberate global tables in _operator_global_tables)", tb.name))
		}
		if tb.partition {
			if tb.appCanSelect {
				out = append(out, fmt.Sprintf("%s: buzz_app may read this partition directly, bypassing the parent's row-level security", tb.name))
			}
			continue
		}
		if !tb.rls || !tb.forced || !tb.restrictive {
			out = append(out, fmt.Sprintf("%s: row-level security enabled=%v forced=%v restrictive tenant policy=%v", tb.name, tb.rls, tb.forced, tb.restrictive))
		}
	}

	// Every unique index (primary keys included) of a tenant table must
	// lead with community_id.
	rows, err = conn.Query(ctx, `
SELECT c.relname, i.relname, pg_get_indexdef(x.indexrelid)
FROM pg_index x
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND x.indisunique
  AND c.relname NOT IN (SELECT table_name FROM _operator_global_tables)
  AND (x.indkey[0] = 0 OR (SELECT a.attname FROM pg_attribute a
                           WHERE a.attrelid = c.oid AND a.attnum = x.indkey[0]) <> 'community_id')`)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([3]string, error) {
		var s [3]string
		return s, r.Scan(&s[0], &s[1], &s[2])
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		out = append(out, fmt.Sprintf("%s: unique index %s does not lead with community_id: %s", b[0], b[1], b[2]))
	}

	// Global tables are really registered ones, and the registry names
	// only existing tables.
	var missing []string
	rows, err = conn.Query(ctx, `SELECT table_name FROM _operator_global_tables WHERE to_regclass(table_name) IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	if missing, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		out = append(out, fmt.Sprintf("_operator_global_tables names tables that do not exist: %v", missing))
	}

	// The relay role must not bypass row-level security.
	var super, bypass bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = 'buzz_app'`).Scan(&super, &bypass); err != nil {
		t.Fatal(err)
	}
	if super || bypass {
		out = append(out, fmt.Sprintf("buzz_app: superuser=%v bypassrls=%v", super, bypass))
	}
	return out
}

// TestSchemaLintCatchesViolations proves the lint is not vacuous.
func TestSchemaLintCatchesViolations(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `
CREATE TABLE lint_no_tenant (id int PRIMARY KEY);
CREATE TABLE lint_bad_key (community_id uuid NOT NULL, id int, PRIMARY KEY (id, community_id));
ALTER TABLE lint_bad_key ENABLE ROW LEVEL SECURITY`); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lintSchema(t, conn), "\n")
	for _, want := range []string{
		"lint_no_tenant: no community_id NOT NULL",
		"lint_no_tenant: row-level security enabled=false",
		"lint_bad_key: row-level security enabled=true forced=false",
		"lint_bad_key: unique index lint_bad_key_pkey does not lead with community_id",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lint missed %q; reported:\n%s", want, got)
		}
	}
}
