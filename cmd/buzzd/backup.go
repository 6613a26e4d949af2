package main

// buzzd backup and restore: the embedded store's online backup and its
// restore.
// A running buzzd takes the backup itself (the events engine admits one
// process) when asked over a Unix socket in its data directory: whoever
// may read the data directory may ask, no one else.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
)

// controlSocketName is the Unix socket a serving buzzd listens on in its
// data directory, for buzzd backup.
const controlSocketName = "buzzd.sock"

const backupUsage = `usage: buzzd backup DIR [flags]
       buzzd restore DIR [flags]

backup   writes a consistent snapshot of the embedded store (BUZZ_DATA_DIR)
         into DIR, a new or empty directory, while buzzd serves: the
         running buzzd takes it, asked over the socket buzzd.sock in its
         data directory; with no buzzd running, this command takes it.
         DIR is a data directory: start buzzd on it (BUZZ_DATA_DIR=DIR),
         or copy it into place with buzzd restore.
restore  copies the backup in DIR into BUZZ_DATA_DIR, which must be new or
         empty; an interrupted backup is refused.

Every buzzd setting and flag applies (BUZZ_DATA_DIR, -data-dir). The
embedded store only: back PostgreSQL up with its own tools (pg_dump).
`

// runBackupCmd runs "buzzd backup|restore …" (args without the
// command word).
func runBackupCmd(ctx context.Context, cmd string, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "help" || a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprint(stdout, backupUsage)
			return nil
		}
	}
	help := "buzzd " + cmd + " help"
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageError{err: fmt.Errorf("%s: want a directory: buzzd %s DIR", cmd, cmd), help: help}
	}
	dir, args := args[0], args[1:]
	cfg, err := parseConfig(cmd, args, lookupEnv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if cfg.DatabaseURL != "" {
		return usageError{err: fmt.Errorf("%s: DATABASE_URL is set: %s is for the embedded store (BUZZ_DATA_DIR); back PostgreSQL up with its own tools (pg_dump)", cmd, cmd), help: help}
	}
	logger := newLogger(cfg, stderr)
	switch cmd {
	case "backup":
		return backupCmd(ctx, cfg, dir, logger, stdout)
	default:
		if err := embedded.Restore(ctx, dir, cfg.DataDir); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		fmt.Fprintf(stdout, "restored %s into %s; start buzzd with BUZZ_DATA_DIR=%s\n", dir, cfg.DataDir, cfg.DataDir)
		return nil
	}
}

// backupCmd asks the buzzd serving cfg.DataDir for a backup into dir, or
// takes it itself when none answers.
func backupCmd(ctx context.Context, cfg Config, dir string, logger *slog.Logger, stdout io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	var info embedded.BackupInfo
	if client, ok := dialControl(ctx, cfg.DataDir); ok {
		info, err = remoteBackup(ctx, client, abs)
	} else {
		info, err = localBackup(ctx, cfg, abs, logger)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "backed up %s into %s: events in %s, %d bytes, in %v (writes paused %v)\nrestore with: buzzd restore %s (into BUZZ_DATA_DIR), or start buzzd with BUZZ_DATA_DIR=%s\n",
		cfg.DataDir, abs, info.Events, info.Bytes, info.Duration.Round(time.Millisecond), info.Pause.Round(time.Microsecond), abs, abs)
	return nil
}

// localBackup opens the store and backs it up: no buzzd serves it.
func localBackup(ctx context.Context, cfg Config, dir string, logger *slog.Logger) (embedded.BackupInfo, error) {
	if _, err := os.Stat(filepath.Join(cfg.DataDir, embedded.DefaultFileName)); err != nil {
		return embedded.BackupInfo{}, fmt.Errorf("no embedded store in %s: %w", cfg.DataDir, err)
	}
	backend, err := openBackend(ctx, cfg, logger, true)
	if errors.Is(err, store.ErrInUse) {
		return embedded.BackupInfo{}, fmt.Errorf("a process holds the store in %s but nothing answers on %s (a buzzd of an older version?): %w",
			cfg.DataDir, filepath.Join(cfg.DataDir, controlSocketName), err)
	}
	if err != nil {
		return embedded.BackupInfo{}, err
	}
	defer backend.Close()
	st, ok := backend.(*embedded.Store)
	if !ok {
		return embedded.BackupInfo{}, errors.New("the store is not the embedded one")
	}
	return st.Backup(ctx, dir)
}

// dialControl returns a client for the control socket of the buzzd
// serving dataDir, and whether one answers.
func dialControl(ctx context.Context, dataDir string) (*http.Client, bool) {
	path := filepath.Join(dataDir, controlSocketName)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, false
	}
	conn.Close()
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
	}}, true
}

// remoteBackup asks the serving buzzd for a backup into dir.
func remoteBackup(ctx context.Context, client *http.Client, dir string) (embedded.BackupInfo, error) {
	var info embedded.BackupInfo
	u := "http://buzzd/backup?" + url.Values{"dir": {dir}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return info, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return info, fmt.Errorf("the serving buzzd: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return info, fmt.Errorf("the serving buzzd: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return info, fmt.Errorf("the serving buzzd: %s", strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return info, fmt.Errorf("the serving buzzd's answer: %w", err)
	}
	return info, nil
}

// serveControl listens on the control socket in the data directory and
// answers backup requests with st's Backup, until ctx ends. A socket
// that cannot be made (a path too long for a Unix socket, a file system
// without them) or that another process answers on is logged and left:
// the relay serves without it.
func serveControl(ctx context.Context, dataDir string, st *embedded.Store, logger *slog.Logger) (stop func()) {
	path := filepath.Join(dataDir, controlSocketName)
	if _, ok := dialControl(ctx, dataDir); ok {
		logger.Warn("another buzzd answers on the control socket; buzzd backup reaches it, not this one", "socket", path)
		return func() {}
	}
	_ = os.Remove(path) // left by a process that was killed
	ln, err := net.Listen("unix", path)
	if err != nil {
		logger.Warn("no control socket: buzzd backup cannot reach this relay", "socket", path, "err", err)
		return func() {}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		logger.Warn("no control socket: buzzd backup cannot reach this relay", "socket", path, "err", err)
		return func() {}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /backup", func(w http.ResponseWriter, r *http.Request) {
		dir := r.URL.Query().Get("dir")
		if !filepath.IsAbs(dir) {
			http.Error(w, "want an absolute directory", http.StatusBadRequest)
			return
		}
		logger.Info("backup started", "dir", dir)
		info, err := st.Backup(r.Context(), dir)
		if err != nil {
			logger.Error("backup failed", "dir", dir, "err", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		logger.Info("backup written", "dir", dir, "events", info.Events, "bytes", info.Bytes, "duration", info.Duration)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(info)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		_ = srv.Close()
		_ = os.Remove(path)
	}
}
