package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/store/embedded"
)

// TestBackupCommandLine: the backup and restore commands' usage
// mistakes are usage errors naming the problem, and PostgreSQL is refused.
func TestBackupCommandLine(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"backup"}, want: "want a directory"},
		{args: []string{"restore", "-data-dir", "x"}, want: "want a directory"},
		{args: []string{"backup", "b"}, env: map[string]string{"DATABASE_URL": "postgres://127.0.0.1/x"}, want: "pg_dump"},
	} {
		err := run(ctx, tt.args, envMap(tt.env), nil, io.Discard, io.Discard)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("buzzd %v = %v, want a usage error with %q", tt.args, err, tt.want)
		}
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"backup", "help"}, envMap(nil), nil, &out, io.Discard); err != nil || !strings.Contains(out.String(), "buzzd restore DIR") {
		t.Fatalf("buzzd backup help = %v\n%s", err, out.String())
	}
}

// TestBackupWithoutRelay: with no buzzd serving the data directory, buzzd
// backup opens the store and takes the backup itself; without a store it
// says so.
func TestBackupWithoutRelay(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	st, err := embedded.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.EnsureCommunity(ctx, "a.example"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	bdir := filepath.Join(t.TempDir(), "b")
	var out bytes.Buffer
	env := envMap(map[string]string{"BUZZ_DATA_DIR": data, "BUZZ_LOG_LEVEL": "error"})
	if err := run(ctx, []string{"backup", bdir}, env, nil, &out, io.Discard); err != nil {
		t.Fatalf("buzzd backup: %v", err)
	}
	if info, err := embedded.CheckBackup(bdir); err != nil || info.Events != "lsm" || !strings.Contains(out.String(), "events in lsm") {
		t.Fatalf("the backup: %+v, %v\n%s", info, err, out.String())
	}
	empty := envMap(map[string]string{"BUZZ_DATA_DIR": t.TempDir()})
	if err := run(ctx, []string{"backup", filepath.Join(t.TempDir(), "c")}, empty, nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "no embedded store") {
		t.Fatalf("buzzd backup of an empty data directory = %v", err)
	}
}
