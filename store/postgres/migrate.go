package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for goose
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate applies every pending embedded migration to the database at
// databaseURL. It is idempotent, and safe when several processes start at
// once: goose serializes them on a session-level advisory lock, so one
// applies the migrations and the others find nothing pending. Run it as the
// schema owner (not as the RLS role).
func Migrate(ctx context.Context, databaseURL string) error {
	db, p, err := provider(databaseURL)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer db.Close()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

// Pending returns how many of the embedded migrations the database at
// databaseURL has not applied (all of them for a database never migrated).
// It takes no lock and changes nothing: a server checks it at start and
// refuses to run on a schema older than its code.
func Pending(ctx context.Context, databaseURL string) (int, error) {
	db, p, err := provider(databaseURL)
	if err != nil {
		return 0, fmt.Errorf("postgres: migration status: %w", err)
	}
	defer db.Close()
	status, err := p.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres: migration status: %w", err)
	}
	n := 0
	for _, m := range status {
		if m.State == goose.StatePending {
			n++
		}
	}
	return n, nil
}

// provider opens databaseURL and the migration provider over it; the
// caller closes db.
func provider(databaseURL string) (*sql.DB, *goose.Provider, error) {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("open: %w", err)
	}
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	// Versions may have gaps (numbers reserved for work not merged yet),
	// and such a lower version may arrive after higher ones were applied:
	// it is applied then, instead of failing as "missing".
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true),
		goose.WithAllowOutofOrder(true))
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, p, nil
}

// MigrationFS returns the embedded migration files (for tooling and tests).
func MigrationFS() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations") // the directory is embedded
	return sub
}
