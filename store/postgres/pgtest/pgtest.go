// Package pgtest gives tests their own PostgreSQL database with the buzz
// schema, cloned from a migrated template so each costs a CREATE DATABASE
// rather than a migration run.
//
// The server is taken from BUZZ_TEST_POSTGRES (a URL of a user allowed to
// create databases; default postgres://postgres@127.0.0.1:5432/postgres).
// When it is unreachable, tests are skipped, or fail when CI=true.
//
// It is for tests only; it must not import the relay (package buzz).
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/testenv"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/store/postgres"
)

// DefaultAdminURL is used when BUZZ_TEST_POSTGRES is unset.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL tests use to create and drop databases.
func AdminURL() string {
	if u := os.Getenv("BUZZ_TEST_POSTGRES"); u != "" {
		return u
	}
	return DefaultAdminURL
}

// templateOnce builds the template at most once per test binary.
var templateOnce = struct {
	sync.Mutex
	name string
}{}

// NewDatabase creates a fresh database holding the migrated buzz schema and
// returns its URL; it is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := connectAdmin(ctx, t)
	defer admin.Close(context.Background())

	tpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: template: %v", err)
	}
	name := "buzz_test_" + randomSuffix()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tpl}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() { dropDatabase(t, name) })
	return DatabaseURL(name)
}

// NewEmptyDatabase creates a fresh database without the schema (for
// migration tests) and returns its URL; it is dropped when the test ends.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := connectAdmin(ctx, t)
	defer admin.Close(context.Background())
	name := "buzz_test_" + randomSuffix()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() { dropDatabase(t, name) })
	return DatabaseURL(name)
}

func dropDatabase(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Logf("pgtest: drop %s: %v", name, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Logf("pgtest: drop %s: %v", name, err)
	}
}

// DatabaseURL returns the admin URL with its database replaced by name.
func DatabaseURL(name string) string {
	u, err := url.Parse(AdminURL())
	if err != nil {
		return AdminURL()
	}
	u.Path = "/" + name
	return u.String()
}

func connectAdmin(ctx context.Context, t testing.TB) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		testenv.Unavailable(t, "pgtest: PostgreSQL at "+AdminURL(), err)
	}
	return c
}

// ensureTemplate returns the name of the template database for the current
// migrations, creating it if needed. The name carries a hash of the
// migration files, so a schema change gets a new template; creation is
// serialized across processes with an advisory lock.
func ensureTemplate(ctx context.Context, admin *pgx.Conn) (string, error) {
	templateOnce.Lock()
	defer templateOnce.Unlock()
	if templateOnce.name != "" {
		return templateOnce.name, nil
	}
	h := sha256.New()
	err := fs.WalkDir(postgres.MigrationFS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(postgres.MigrationFS(), p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	name := "buzz_template_" + hex.EncodeToString(h.Sum(nil))[:12]
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(hashtext('buzz pgtest template'))"); err != nil {
		return "", err
	}
	defer admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext('buzz pgtest template'))")
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		build := name + "_build"
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{build}.Sanitize()+" WITH (FORCE)"); err != nil {
			return "", err
		}
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{build}.Sanitize()); err != nil {
			return "", err
		}
		if err := postgres.Migrate(ctx, DatabaseURL(build)); err != nil {
			return "", fmt.Errorf("migrate template: %w", err)
		}
		if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{build}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", err
		}
	}
	templateOnce.name = name
	return name, nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
