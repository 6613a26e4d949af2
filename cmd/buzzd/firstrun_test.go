package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

// TestPortMovesTheMappedHost: -port (BUZZ_PORT) moves the listening port and,
// when RELAY_URL is unset, the mapped host with it, so a newcomer changing
// the port still reaches the community.
func TestPortMovesTheMappedHost(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"-port", "7150"}, envMap(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BindAddr != "0.0.0.0:7150" || cfg.RelayURL != "ws://localhost:7150" || cfg.RelayHost != "localhost:7150" {
		t.Errorf("bind %q url %q host %q", cfg.BindAddr, cfg.RelayURL, cfg.RelayHost)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %q", cfg.Warnings)
	}
	// An explicit RELAY_URL is kept (a public URL behind a proxy).
	cfg, err = parseConfig("serve", []string{"-port", "7150"}, envMap(map[string]string{"RELAY_URL": "wss://relay.example"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BindAddr != "0.0.0.0:7150" || cfg.RelayHost != "relay.example" || len(cfg.Warnings) != 0 {
		t.Errorf("bind %q host %q warnings %q", cfg.BindAddr, cfg.RelayHost, cfg.Warnings)
	}
	// -port and -bind both naming the port is a usage error.
	_, err = parseConfig("serve", []string{"-port", "7150", "-bind", "127.0.0.1:7151"}, envMap(nil), io.Discard)
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "set one") {
		t.Errorf("port and bind: %v", err)
	}
	for _, bad := range []string{"0", "70000", "http"} {
		if _, err := parseConfig("serve", []string{"-port", bad}, envMap(nil), io.Discard); err == nil {
			t.Errorf("-port %s accepted", bad)
		}
	}
}

// TestBindPortMismatchWarns: listening on another port than a loopback
// RELAY_URL names is warned about (requests there would carry an unmapped
// host); a public RELAY_URL on another port (behind a proxy) is not.
func TestBindPortMismatchWarns(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"-bind", "127.0.0.1:7150"}, envMap(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "RELAY_URL ws://localhost:3000 names port 3000 but buzzd listens on 127.0.0.1:7150") ||
		!strings.Contains(cfg.Warnings[0], "-port 7150") {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
	for _, env := range []map[string]string{
		{"RELAY_URL": "wss://relay.example", "BUZZ_BIND_ADDR": "0.0.0.0:8080"},
		{"RELAY_URL": "ws://127.0.0.1:7150", "BUZZ_BIND_ADDR": "127.0.0.1:7150"},
		{"RELAY_URL": "ws://localhost:7150"},
	} {
		cfg, err := parseConfig("serve", nil, envMap(env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Warnings) != 0 {
			t.Errorf("%v: warnings %q", env, cfg.Warnings)
		}
	}
}

// TestUnknownSettingsWarned: a misspelt setting is named, with the setting
// it probably meant; known settings and unrelated variables are not.
func TestUnknownSettingsWarned(t *testing.T) {
	got := UnknownSettings([]string{
		"BUZZ_MAX_FILTER=5", "BUZZ_LOG_LEVL=debug", "BUZZ_LOG_LEVEL=info", "RELAY_URL=ws://x",
		"PATH=/bin", "HOME=/root", "BUZZ_TOTALLY_DIFFERENT_THING=1",
	})
	want := []string{
		"BUZZ_LOG_LEVL is not a buzzd setting and is ignored (did you mean BUZZ_LOG_LEVEL?)",
		"BUZZ_MAX_FILTER is not a buzzd setting and is ignored (did you mean BUZZ_MAX_FILTERS?)",
		"BUZZ_TOTALLY_DIFFERENT_THING is not a buzzd setting and is ignored",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestLogLevelNamesTheValidValues: a wrong log level says which are valid.
func TestLogLevelNamesTheValidValues(t *testing.T) {
	_, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_LOG_LEVEL": "verbose"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "want debug, info, warn or error") {
		t.Errorf("err = %v", err)
	}
}

// TestBusyDataDirectorySaysSo: a second process on a running buzzd's data
// directory is told the directory is in use, not a bare errno; so is a
// second open in the same process.
func TestBusyDataDirectorySaysSo(t *testing.T) {
	dir := t.TempDir()
	startBuzzd(t, freePort(t), e2eSettings("BUZZ_DATA_DIR", dir))
	cfg, err := parseConfig("serve", []string{"-data-dir", dir}, envMap(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = openBackend(t.Context(), cfg, slog.New(slog.DiscardHandler), true)
	if !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), "the directory is in use by another process") {
		t.Fatalf("open beside a running buzzd: %v", err)
	}

	own := t.TempDir()
	cfg.DataDir = own
	first, err := openBackend(t.Context(), cfg, slog.New(slog.DiscardHandler), true)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := openBackend(t.Context(), cfg, slog.New(slog.DiscardHandler), true); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("second open in one process: %v", err)
	}
}

// TestUnmigratedDatabaseSaysHow: PostgreSQL without buzzd's migrations is
// refused at start with what to run, not with a missing relation.
func TestUnmigratedDatabaseSaysHow(t *testing.T) {
	url := pgtest.NewEmptyDatabase(t)
	cfg, err := parseConfig("serve", nil, envMap(map[string]string{"DATABASE_URL": url}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = openBackend(t.Context(), cfg, slog.New(slog.DiscardHandler), true)
	if err == nil || !strings.Contains(err.Error(), "run `buzzd migrate` with the same DATABASE_URL first, or start with BUZZ_AUTO_MIGRATE=true") {
		t.Fatalf("open: %v", err)
	}
	cfg.AutoMigrate = true
	st, err := openBackend(t.Context(), cfg, slog.New(slog.DiscardHandler), true)
	if err != nil {
		t.Fatalf("with auto-migrate: %v", err)
	}
	st.Close()
	cfg.AutoMigrate = false
	st, err = openBackend(t.Context(), cfg, slog.New(slog.DiscardHandler), true)
	if err != nil {
		t.Fatalf("after migrating: %v", err)
	}
	st.Close()
}

// TestHelpPerCommand: every command answers -h, --help and help with its
// own help on stdout and exit status 0; a mistake points to that help.
func TestHelpPerCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "--help"}, "usage: buzzd audit verify (-host HOST | -all)"},
		{[]string{"audit", "-h"}, "usage: buzzd audit verify"},
		{[]string{"audit", "verify", "-h"}, "usage: buzzd audit verify"},
		{[]string{"audit", "help"}, "usage: buzzd audit verify"},
		{[]string{"admin", "--help"}, "member remove HOST PUBKEY"},
		{[]string{"admin", "help"}, "member remove HOST PUBKEY"},
		{[]string{"admin", "community", "add", "--help"}, "community add HOST [-owner PUBKEY] [-create-only]"},
		{[]string{"export", "--help"}, "usage: buzzd export [-host H | -all]"},
		{[]string{"export", "help"}, "-since T"},
		{[]string{"import", "-h"}, "usage: buzzd import [-f FILE]"},
		{[]string{"help", "port"}, "-port value  (BUZZ_PORT"},
		{[]string{"help", "BUZZ_DATA_DIR"}, "-data-dir value  (BUZZ_DATA_DIR"},
	} {
		var out, errOut bytes.Buffer
		err := run(t.Context(), tc.args, envMap(nil), nil, &out, &errOut)
		if code := exitCode(err, &errOut); code != 0 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%q: exit %d, output %q", tc.args, code, out.String())
		}
	}
	var out bytes.Buffer
	_ = run(t.Context(), []string{"admin", "community", "add", "--help"}, envMap(nil), nil, &out, io.Discard)
	if strings.Contains(out.String(), "member remove") {
		t.Errorf("admin community add --help prints all of admin:\n%s", out.String())
	}
	for _, tc := range []struct {
		args    []string
		pointer string
	}{
		{[]string{"audit"}, "run 'buzzd audit help' for usage"},
		{[]string{"audit", "verify"}, "run 'buzzd audit help' for usage"},
		{[]string{"admin", "community", "frob"}, "run 'buzzd admin help' for usage"},
		{[]string{"admin", "community"}, "run 'buzzd admin help' for usage"},
		{[]string{"export", "stray"}, "run 'buzzd export help' for usage"},
		{[]string{"import", "-keep-going=no"}, "run 'buzzd import help' for usage"},
		{[]string{"export", "-since", "yesterday"}, "run 'buzzd export help' for usage"},
		{[]string{"-nope"}, "run 'buzzd -h' for usage"},
		{[]string{"help", "nope"}, "run 'buzzd -h' for usage"},
	} {
		var errOut bytes.Buffer
		err := run(t.Context(), tc.args, envMap(nil), nil, io.Discard, &errOut)
		if code := exitCode(err, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.pointer) || strings.Count(errOut.String(), "help") > 1 && strings.Contains(errOut.String(), "(see") {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, errOut.String())
		}
	}
}
