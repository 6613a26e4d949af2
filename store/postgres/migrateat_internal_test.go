package postgres

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"
)

// databaseAt creates an empty database (internalDatabase) and migrates it
// up to version, for a test of the migration after it. It returns the
// database's URL, the goose provider (to go up or down further) and a
// connection as the schema owner, which row-level security does not bind;
// all are closed when the test ends.
func databaseAt(t *testing.T, version int64) (string, *goose.Provider, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := internalDatabase(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, MigrationFS(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	owner, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close(context.Background()) })
	return url, p, owner
}
