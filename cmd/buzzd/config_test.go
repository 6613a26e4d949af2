package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
)

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := parseConfig("serve", nil, envMap(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RelayURL != "ws://localhost:3000" || cfg.RelayHost != "localhost:3000" {
		t.Errorf("relay url/host = %q %q", cfg.RelayURL, cfg.RelayHost)
	}
	if cfg.BindAddr != "0.0.0.0:3000" {
		t.Errorf("bind = %q", cfg.BindAddr)
	}
	if cfg.DataDir != "./buzz-data" || cfg.DatabaseURL != "" || cfg.AutoMigrate || cfg.AuthRequired {
		t.Errorf("store/auth defaults wrong: %+v", cfg)
	}
	if cfg.Limits != buzz.DefaultLimits() {
		t.Errorf("limits = %+v, want DefaultLimits", cfg.Limits)
	}
	if cfg.LogLevel != slog.LevelInfo || cfg.LogFormat != "text" || cfg.ShutdownTimeout != 15*time.Second {
		t.Errorf("log/shutdown defaults wrong: %+v", cfg)
	}
}

func TestParseConfigValues(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(t *testing.T, c Config)
	}{
		{"relay url host normalized, default port keeps bind 3000",
			map[string]string{"RELAY_URL": "wss://Relay.Example.:443"}, nil,
			func(t *testing.T, c Config) {
				if c.RelayHost != "relay.example" || c.BindAddr != "0.0.0.0:3000" {
					t.Errorf("host %q bind %q", c.RelayHost, c.BindAddr)
				}
			}},
		{"bind derived from relay url port, loopback folds",
			map[string]string{"RELAY_URL": "ws://127.0.0.1:4000"}, nil,
			func(t *testing.T, c Config) {
				if c.RelayHost != "localhost:4000" || c.BindAddr != "0.0.0.0:4000" {
					t.Errorf("host %q bind %q", c.RelayHost, c.BindAddr)
				}
			}},
		{"explicit bind wins over derived",
			map[string]string{"RELAY_URL": "ws://localhost:4000", "BUZZ_BIND_ADDR": "127.0.0.1:5000"}, nil,
			func(t *testing.T, c Config) {
				if c.BindAddr != "127.0.0.1:5000" {
					t.Errorf("bind %q", c.BindAddr)
				}
			}},
		{"embedded event cache size, off",
			map[string]string{"BUZZ_DB_EVENT_CACHE_MIB": "0"}, nil,
			func(t *testing.T, c Config) {
				if c.DBEventCacheMiB != 0 {
					t.Errorf("event cache %d MiB, want 0", c.DBEventCacheMiB)
				}
			}},
		{"embedded event cache size",
			nil, []string{"-db-event-cache-mib", "256"},
			func(t *testing.T, c Config) {
				if c.DBEventCacheMiB != 256 {
					t.Errorf("event cache %d MiB, want 256", c.DBEventCacheMiB)
				}
			}},
		{"embedded read mapping off",
			map[string]string{"BUZZ_DB_READ_MMAP_MIB": "0"}, nil,
			func(t *testing.T, c Config) {
				if c.DBReadMmapMiB != 0 {
					t.Errorf("read mapping %d MiB, want 0", c.DBReadMmapMiB)
				}
			}},
		{"embedded maintenance off",
			map[string]string{"BUZZ_DB_MAINTAIN_IDLE": "0"}, nil,
			func(t *testing.T, c Config) {
				if c.DBMaintainIdle != 0 || c.DBMaintainMax != embedded.DefaultMaintainMax {
					t.Errorf("maintenance idle %v max %v, want 0 and the default", c.DBMaintainIdle, c.DBMaintainMax)
				}
			}},
		{"embedded maintenance delays",
			map[string]string{"BUZZ_DB_MAINTAIN_IDLE": "200ms"}, []string{"-db-maintain-max", "5s"},
			func(t *testing.T, c Config) {
				if c.DBMaintainIdle != 200*time.Millisecond || c.DBMaintainMax != 5*time.Second {
					t.Errorf("maintenance idle %v max %v, want 200ms and 5s", c.DBMaintainIdle, c.DBMaintainMax)
				}
			}},
		{"bind flag wins over env",
			map[string]string{"BUZZ_BIND_ADDR": "127.0.0.1:5000"}, []string{"-bind", "127.0.0.1:6000"},
			func(t *testing.T, c Config) {
				if c.BindAddr != "127.0.0.1:6000" {
					t.Errorf("bind %q", c.BindAddr)
				}
			}},
		{"flag overrides env",
			map[string]string{"BUZZ_DATA_DIR": "/a", "RELAY_URL": "ws://a.example"},
			[]string{"-data-dir=/b", "-relay-url", "wss://b.example"},
			func(t *testing.T, c Config) {
				if c.DataDir != "/b" || c.RelayHost != "b.example" {
					t.Errorf("data dir %q host %q", c.DataDir, c.RelayHost)
				}
			}},
		{"booleans accept yes/on/1/TRUE",
			map[string]string{"BUZZ_AUTO_MIGRATE": "yes", "BUZZ_AUTH_REQUIRED": "On"}, nil,
			func(t *testing.T, c Config) {
				if !c.AutoMigrate || !c.AuthRequired {
					t.Errorf("auto-migrate %v auth %v", c.AutoMigrate, c.AuthRequired)
				}
			}},
		{"bare bool flag is true",
			nil, []string{"-auth-required"},
			func(t *testing.T, c Config) {
				if !c.AuthRequired {
					t.Error("auth not required")
				}
			}},
		{"bool flag false overrides env true",
			map[string]string{"BUZZ_AUTH_REQUIRED": "1"}, []string{"-auth-required=false"},
			func(t *testing.T, c Config) {
				if c.AuthRequired {
					t.Error("auth still required")
				}
			}},
		{"limits",
			map[string]string{"BUZZ_MAX_FRAME_BYTES": "1048576", "BUZZ_MAX_FILTERS": "20", "BUZZ_MAX_FUTURE": "5m"},
			[]string{"-max-limit", "500", "-max-content-bytes", "1000", "-max-subscriptions", "7", "-max-subid-length", "64", "-send-queue", "50", "-event-concurrency", "2"},
			func(t *testing.T, c Config) {
				l := c.Limits
				if l.MaxFrameBytes != 1<<20 || l.MaxFilters != 20 || l.MaxFutureSkew != 5*time.Minute ||
					l.MaxLimit != 500 || l.MaxContentBytes != 1000 || l.MaxSubscriptions != 7 ||
					l.MaxSubIDLength != 64 || l.SendQueue != 50 || l.EventConcurrency != 2 {
					t.Errorf("limits %+v", l)
				}
			}},
		{"info and logging",
			map[string]string{"BUZZ_RELAY_NAME": "hive", "BUZZ_RELAY_DESCRIPTION": "d", "BUZZ_RELAY_CONTACT": "mailto:a@b",
				"BUZZ_RELAY_PUBKEY": strings.Repeat("ab", 32), "BUZZ_LOG_LEVEL": "debug", "BUZZ_LOG_FORMAT": "JSON"},
			[]string{"-shutdown-timeout", "3s"},
			func(t *testing.T, c Config) {
				if c.Info.Name != "hive" || c.Info.Description != "d" || c.Info.Contact != "mailto:a@b" || c.Info.PubKey != strings.Repeat("ab", 32) {
					t.Errorf("info %+v", c.Info)
				}
				if c.LogLevel != slog.LevelDebug || c.LogFormat != "json" || c.ShutdownTimeout != 3*time.Second {
					t.Errorf("log %v %q %v", c.LogLevel, c.LogFormat, c.ShutdownTimeout)
				}
			}},
		{"empty variables count as unset",
			map[string]string{"RELAY_URL": "", "BUZZ_BIND_ADDR": "", "DATABASE_URL": "", "BUZZ_DB_RLS_ROLE": ""}, nil,
			func(t *testing.T, c Config) {
				if c.RelayHost != "localhost:3000" || c.BindAddr != "0.0.0.0:3000" || c.DatabaseURL != "" || c.DBRLSRole != "buzz_app" {
					t.Errorf("host %q bind %q db %q role %q", c.RelayHost, c.BindAddr, c.DatabaseURL, c.DBRLSRole)
				}
			}},
		{"database url selects postgres",
			map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/buzz"}, nil,
			func(t *testing.T, c Config) {
				if c.DatabaseURL != "postgres://postgres@127.0.0.1:5432/buzz" || c.DBRLSRole != "buzz_app" || c.DBMaxConns != 0 {
					t.Errorf("database url %q role %q conns %d", c.DatabaseURL, c.DBRLSRole, c.DBMaxConns)
				}
			}},
		{"postgres pool and role",
			map[string]string{"BUZZ_DB_MAX_CONNS": "32", "BUZZ_DB_RLS_ROLE": "none"}, nil,
			func(t *testing.T, c Config) {
				if c.DBMaxConns != 32 || c.DBRLSRole != "" {
					t.Errorf("conns %d role %q", c.DBMaxConns, c.DBRLSRole)
				}
			}},
		{"keyword/value DSN",
			map[string]string{"DATABASE_URL": "host=127.0.0.1 user=postgres dbname=buzz"}, []string{"-db-rls-role", "relay_rw"},
			func(t *testing.T, c Config) {
				if c.DatabaseURL == "" || c.DBRLSRole != "relay_rw" {
					t.Errorf("dsn %q role %q", c.DatabaseURL, c.DBRLSRole)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfig("serve", tt.args, envMap(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg)
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		want      []string // substrings of the error
		notWant   string   // must not appear (secrets)
		wantUsage bool
	}{
		{name: "relay url scheme", env: map[string]string{"RELAY_URL": "http://x.example"}, want: []string{"RELAY_URL", "scheme"}},
		{name: "relay url path", env: map[string]string{"RELAY_URL": "ws://x.example/relay"}, want: []string{"RELAY_URL", "path"}},
		{name: "relay url no host", env: map[string]string{"RELAY_URL": "ws://"}, want: []string{"RELAY_URL", "host"}},
		{name: "relay url bad port", env: map[string]string{"RELAY_URL": "ws://x.example:99999"}, want: []string{"RELAY_URL"}},
		{name: "relay url flag", args: []string{"-relay-url", "ftp://x"}, want: []string{"RELAY_URL", "scheme"}},
		{name: "bind addr", env: map[string]string{"BUZZ_BIND_ADDR": "3000"}, want: []string{"BUZZ_BIND_ADDR", "host:port"}},
		{name: "bind port", env: map[string]string{"BUZZ_BIND_ADDR": "0.0.0.0:70000"}, want: []string{"BUZZ_BIND_ADDR", "port"}},
		{name: "bind flag", args: []string{"-bind", "nope"}, want: []string{"-bind", "host:port"}, wantUsage: true},
		{name: "empty data dir", env: map[string]string{"BUZZ_DATA_DIR": " "}, want: []string{"BUZZ_DATA_DIR", "empty"}},
		{name: "database url scheme hides secret", env: map[string]string{"DATABASE_URL": "mysql://u:hunter2@h/db"}, want: []string{"DATABASE_URL", "postgres"}, notWant: "hunter2"},
		{name: "database url flag hides secret", args: []string{"-database-url", "mysql://u:hunter2@h/db"}, want: []string{"-database-url"}, notWant: "hunter2", wantUsage: true},
		{name: "database url garbage", env: map[string]string{"DATABASE_URL": "hunter2"}, want: []string{"DATABASE_URL"}, notWant: "hunter2"},
		{name: "db conns", env: map[string]string{"BUZZ_DB_MAX_CONNS": "1"}, want: []string{"BUZZ_DB_MAX_CONNS", "2 to 1000"}},
		{name: "event cache negative", env: map[string]string{"BUZZ_DB_EVENT_CACHE_MIB": "-1"}, want: []string{"BUZZ_DB_EVENT_CACHE_MIB", "MiB"}},
		{name: "event cache units", env: map[string]string{"BUZZ_DB_EVENT_CACHE_MIB": "64MiB"}, want: []string{"BUZZ_DB_EVENT_CACHE_MIB", "MiB"}},
		{name: "read mapping too large", env: map[string]string{"BUZZ_DB_READ_MMAP_MIB": "4096"}, want: []string{"BUZZ_DB_READ_MMAP_MIB", "MiB"}},
		{name: "maintenance idle negative", env: map[string]string{"BUZZ_DB_MAINTAIN_IDLE": "-1s"}, want: []string{"BUZZ_DB_MAINTAIN_IDLE", "duration"}},
		{name: "maintenance max units", env: map[string]string{"BUZZ_DB_MAINTAIN_MAX": "2"}, want: []string{"BUZZ_DB_MAINTAIN_MAX", "duration"}},
		{name: "maintenance max too long", args: []string{"-db-maintain-max", "2h"}, want: []string{"-db-maintain-max", "1h"}, wantUsage: true},
		{name: "maintenance max below idle", env: map[string]string{"BUZZ_DB_MAINTAIN_IDLE": "2s", "BUZZ_DB_MAINTAIN_MAX": "1s"}, want: []string{"BUZZ_DB_MAINTAIN_MAX", "at least BUZZ_DB_MAINTAIN_IDLE"}},
		{name: "db role", env: map[string]string{"BUZZ_DB_RLS_ROLE": "Robert'); DROP"}, want: []string{"BUZZ_DB_RLS_ROLE", "role name"}},
		{name: "bool", env: map[string]string{"BUZZ_AUTO_MIGRATE": "maybe"}, want: []string{"BUZZ_AUTO_MIGRATE", "yes/no"}},
		{name: "bool flag", args: []string{"-auth-required=sometimes"}, want: []string{"-auth-required"}, wantUsage: true},
		{name: "frame negative", env: map[string]string{"BUZZ_MAX_FRAME_BYTES": "-1"}, want: []string{"BUZZ_MAX_FRAME_BYTES", "positive"}},
		{name: "frame zero", env: map[string]string{"BUZZ_MAX_FRAME_BYTES": "0"}, want: []string{"BUZZ_MAX_FRAME_BYTES", "positive"}},
		{name: "frame text", env: map[string]string{"BUZZ_MAX_FRAME_BYTES": "512KiB"}, want: []string{"BUZZ_MAX_FRAME_BYTES", "positive"}},
		{name: "filters", args: []string{"-max-filters", "x"}, want: []string{"-max-filters", "positive"}, wantUsage: true},
		{name: "future duration", env: map[string]string{"BUZZ_MAX_FUTURE": "15"}, want: []string{"BUZZ_MAX_FUTURE", "duration"}},
		{name: "pubkey", env: map[string]string{"BUZZ_RELAY_PUBKEY": "npub1notakey"}, want: []string{"BUZZ_RELAY_PUBKEY", "hex"}},
		{name: "log level", env: map[string]string{"BUZZ_LOG_LEVEL": "loud"}, want: []string{"BUZZ_LOG_LEVEL"}},
		{name: "kind allow-list", env: map[string]string{"BUZZ_KIND_ALLOWLIST": "buzz,7-1"}, want: []string{"BUZZ_KIND_ALLOWLIST", "off, buzz"}},
		{name: "kind allow-list flag", args: []string{"-kind-allowlist", "nostr"}, want: []string{"-kind-allowlist"}, wantUsage: true},
		{name: "log format", env: map[string]string{"BUZZ_LOG_FORMAT": "xml"}, want: []string{"BUZZ_LOG_FORMAT", "text or json"}},
		{name: "debug addr", env: map[string]string{"BUZZ_DEBUG_ADDR": "localhost"}, want: []string{"BUZZ_DEBUG_ADDR", "host:port"}},
		{name: "shutdown timeout", env: map[string]string{"BUZZ_SHUTDOWN_TIMEOUT": "-3s"}, want: []string{"BUZZ_SHUTDOWN_TIMEOUT"}},
		{name: "unknown flag", args: []string{"-nope"}, want: []string{"nope"}, wantUsage: true},
		{name: "extra argument", args: []string{"stray"}, want: []string{"unexpected argument"}, wantUsage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig("serve", tt.args, envMap(tt.env), io.Discard)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("error %q leaks %q", err, tt.notWant)
			}
			var ue usageError
			if got := errors.As(err, &ue); got != tt.wantUsage {
				t.Errorf("usage error = %v, want %v", got, tt.wantUsage)
			}
		})
	}
}

func TestSettingsUnique(t *testing.T) {
	envs, flags := map[string]bool{}, map[string]bool{}
	for _, s := range settings() {
		if envs[s.env] || flags[s.flag] {
			t.Errorf("duplicate setting %s / -%s", s.env, s.flag)
		}
		envs[s.env], flags[s.flag] = true, true
		if s.usage == "" || s.def == "" {
			t.Errorf("%s lacks usage or default", s.env)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"serve", "-h"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, envMap(nil), nil, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, s := range settings() {
			if !strings.Contains(out.String(), s.env) || !strings.Contains(out.String(), "-"+s.flag) {
				t.Errorf("%v: help lacks %s / -%s", args, s.env, s.flag)
			}
		}
	}
	_, err := parseConfig("serve", []string{"-h"}, envMap(nil), io.Discard)
	if !errors.Is(err, flag.ErrHelp) {
		t.Errorf("parseConfig -h = %v, want flag.ErrHelp", err)
	}
}

func TestRunCommands(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, envMap(nil), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "buzzd ") {
		t.Errorf("version output %q", out.String())
	}
	if want := " verifier=" + nostr.VerifyBackend + "\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("version output %q does not end with the signature verifier %q", out.String(), want)
	}

	err := run(context.Background(), []string{"frobnicate"}, envMap(nil), nil, io.Discard, io.Discard)
	if code := exitCode(err, io.Discard); code != 2 {
		t.Errorf("unknown command: exit %d (%v), want 2", code, err)
	}
	err = run(context.Background(), []string{"migrate"}, envMap(nil), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") || exitCode(err, io.Discard) != 2 {
		t.Errorf("migrate without DATABASE_URL: %v", err)
	}
	err = run(context.Background(), nil, envMap(map[string]string{"BUZZ_MAX_FILTERS": "many"}), nil, io.Discard, io.Discard)
	if err == nil || exitCode(err, io.Discard) != 1 {
		t.Errorf("bad env: %v", err)
	}
	if exitCode(nil, io.Discard) != 0 {
		t.Error("nil error must exit 0")
	}
}

// TestServeBadBindAddr checks that a listen failure is reported (not a hang)
// and that the store opened before it is closed again.
func TestServeListenError(t *testing.T) {
	ln, err := listenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	env := map[string]string{
		"BUZZ_DATA_DIR":  t.TempDir(),
		"BUZZ_BIND_ADDR": ln.Addr().String(), // already taken
		"BUZZ_LOG_LEVEL": "error",
	}
	err = run(context.Background(), nil, envMap(env), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "BUZZ_BIND_ADDR") {
		t.Fatalf("err = %v, want a listen error naming BUZZ_BIND_ADDR", err)
	}
}

// TestConfigurationDoc keeps the settings table of docs/configuration.md
// identical to the settings in config.go. Regenerate it with
// BUZZ_UPDATE_DOCS=1 go test ./cmd/buzzd -run TestConfigurationDoc.
func TestConfigurationDoc(t *testing.T) {
	const path = "../../docs/configuration.md"
	const begin, end = "<!-- config-table:begin -->\n", "<!-- config-table:end -->"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q … %q markers", path, strings.TrimSpace(begin), end)
	}
	got := doc[i+len(begin) : j]
	want := configTableMarkdown()
	if got != want {
		if os.Getenv("BUZZ_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s: the settings table is out of date; run BUZZ_UPDATE_DOCS=1 go test ./cmd/buzzd -run TestConfigurationDoc\ngot:\n%s\nwant:\n%s", path, got, want)
	}
	for _, s := range settings() {
		if !strings.Contains(got, "`"+s.env+"`") || !strings.Contains(got, "`-"+s.flag+"`") {
			t.Errorf("%s: the settings table lacks %s / -%s", path, s.env, s.flag)
		}
	}
}

func TestParseConfigAdmission(t *testing.T) {
	cfg, err := parseConfig("serve", []string{"-max-connections-per-address", "8", "-query-timeout", "3s"},
		envMap(map[string]string{"BUZZ_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.1", "BUZZ_MESSAGE_RATE": "50"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cfg.TrustedProxies); got != "[10.0.0.0/8 192.0.2.1/32]" {
		t.Errorf("trusted proxies %s", got)
	}
	if cfg.Limits.MaxConnectionsPerAddress != 8 || cfg.Limits.QueryTimeout != 3*time.Second || cfg.Limits.MessageRate != 50 {
		t.Errorf("limits %+v", cfg.Limits)
	}
	if _, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_TRUSTED_PROXIES": "proxy.example"}), io.Discard); err == nil {
		t.Error("a host name was accepted as a trusted proxy")
	}
}

// TestLogSummaryIntervalSetting: BUZZ_LOG_SUMMARY_INTERVAL defaults to a
// minute, 0 turns the line off, and a malformed or sub-second value stops
// buzzd naming the variable.
func TestLogSummaryIntervalSetting(t *testing.T) {
	for v, want := range map[string]time.Duration{"": time.Minute, "0": 0, "30s": 30 * time.Second, "1h": time.Hour} {
		cfg, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_LOG_SUMMARY_INTERVAL": v}), io.Discard)
		if err != nil || cfg.LogSummaryInterval != want {
			t.Errorf("%q: %v %v", v, cfg.LogSummaryInterval, err)
		}
	}
	for _, v := range []string{"1ms", "soon", "-1m", "48h"} {
		_, err := parseConfig("serve", nil, envMap(map[string]string{"BUZZ_LOG_SUMMARY_INTERVAL": v}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "BUZZ_LOG_SUMMARY_INTERVAL") {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// TestKindAllowListSetting: off by default; "buzz" and lists parse.
func TestKindAllowListSetting(t *testing.T) {
	cfg, err := parseConfig("serve", nil, envMap(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KindAllowList.On() {
		t.Fatalf("default allow-list %s, want off", cfg.KindAllowList)
	}
	cfg, err = parseConfig("serve", nil, envMap(map[string]string{"BUZZ_KIND_ALLOWLIST": "buzz,5000-5999"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.KindAllowList.Allows(40003) || !cfg.KindAllowList.Allows(5500) || cfg.KindAllowList.Allows(4) {
		t.Fatalf("allow-list %s", cfg.KindAllowList)
	}
}
