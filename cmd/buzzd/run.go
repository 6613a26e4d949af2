package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/audit/audithttp"
	"github.com/buzzrelay/buzz/homepage"
	"github.com/buzzrelay/buzz/httpapi"
	"github.com/buzzrelay/buzz/modhttp"
	"github.com/buzzrelay/buzz/nip05"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/threads"
)

// run is buzzd without the process around it: args excludes the program
// name, lookupEnv reads the environment, environ lists it (as os.Environ,
// to warn about variables that look like settings but are none; nil skips
// that), and ctx is cancelled on SIGINT or SIGTERM. It returns nil on a
// clean exit (including a graceful shutdown and -h), a usageError for
// command-line mistakes, and any other error otherwise.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), environ []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve", "migrate":
		cfg, err := parseConfig(cmd, args, lookupEnv, stdout)
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		if err != nil {
			return err
		}
		logger := newLogger(cfg, stderr)
		for _, w := range append(cfg.Warnings, UnknownSettings(environ)...) {
			logger.Warn(w)
		}
		if cmd == "migrate" {
			return migrate(ctx, cfg, logger)
		}
		return serve(ctx, cfg, logger)
	case "audit":
		return runAudit(ctx, args, lookupEnv, stdout, stderr)
	case "admin":
		return runAdmin(ctx, args, lookupEnv, stdout, stderr)
	case "export":
		return runExport(ctx, args, lookupEnv, stdout, stderr)
	case "import":
		return runImport(ctx, args, lookupEnv, os.Stdin, stdout, stderr)
	case "backup", "restore":
		return runBackupCmd(ctx, cmd, args, lookupEnv, stdout, stderr)
	case "sync":
		return runSync(ctx, args, lookupEnv, stdout, stderr)
	case "version":
		if len(args) > 0 {
			return usageError{err: fmt.Errorf("version takes no arguments")}
		}
		fmt.Fprintln(stdout, versionString())
		return nil
	case "help":
		switch {
		case len(args) == 0:
			printUsage(stdout)
		case len(args) == 1 && printSettingHelp(stdout, args[0]):
		default:
			return usageError{err: fmt.Errorf("help: no setting %q", strings.Join(args, " "))}
		}
		return nil
	default:
		return usageError{err: fmt.Errorf("unknown command %q (want serve, migrate, audit, admin, export, import, backup, restore, sync, version or help)", cmd)}
	}
}

// exitCode reports err on stderr and maps it to the process exit status:
// 0 for nil, 2 for command-line mistakes, 1 otherwise.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "buzzd:", err)
	var ue usageError
	if errors.As(err, &ue) {
		help := ue.help
		if help == "" {
			help = "buzzd -h"
		}
		fmt.Fprintf(stderr, "run '%s' for usage\n", help)
		return 2
	}
	return 1
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// migrate applies the embedded PostgreSQL migrations and exits.
func migrate(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if cfg.DatabaseURL == "" {
		return usageError{err: errors.New("migrate: DATABASE_URL (or -database-url) is not set; migrations apply to PostgreSQL only, the embedded store migrates itself")}
	}
	if err := postgres.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	logger.Info("migrations applied", "database", redactDatabaseURL(cfg.DatabaseURL))
	return nil
}

// openBackend opens the store cfg selects: PostgreSQL when DatabaseURL is
// set (migrated first when AutoMigrate), else the embedded store in DataDir.
// A tool that never touches events passes events false: it then runs beside
// a relay holding the embedded store's events engine open.
func openBackend(ctx context.Context, cfg Config, logger *slog.Logger, events bool) (store.Backend, error) {
	if cfg.DatabaseURL != "" {
		if cfg.AutoMigrate {
			if err := postgres.Migrate(ctx, cfg.DatabaseURL); err != nil {
				return nil, fmt.Errorf("auto-migrate: %w", err)
			}
			logger.Info("migrations applied", "database", redactDatabaseURL(cfg.DatabaseURL))
		} else {
			n, err := postgres.Pending(ctx, cfg.DatabaseURL)
			if err != nil {
				return nil, fmt.Errorf("open postgres store: %w", err)
			}
			if n > 0 {
				return nil, fmt.Errorf("the database %s lacks %d of buzzd's migrations: run `buzzd migrate` with the same DATABASE_URL first, or start with BUZZ_AUTO_MIGRATE=true", redactDatabaseURL(cfg.DatabaseURL), n)
			}
		}
		opts := []postgres.Option{postgres.WithLogger(logger), postgres.WithRLSRole(cfg.DBRLSRole),
			postgres.WithAnalyzeInterval(cfg.DBAnalyzeInterval)}
		if cfg.DBMaxConns > 0 {
			opts = append(opts, postgres.WithMaxConns(cfg.DBMaxConns))
		}
		st, err := postgres.Open(ctx, cfg.DatabaseURL, opts...)
		if err != nil {
			return nil, fmt.Errorf("open postgres store: %w", err)
		}
		logger.Info("store opened", "backend", "postgres", "database", redactDatabaseURL(cfg.DatabaseURL))
		return st, nil
	}
	if cfg.AutoMigrate {
		logger.Info("BUZZ_AUTO_MIGRATE has no effect on the embedded store, which always migrates itself")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	opts := []embedded.Option{embedded.WithLogger(logger),
		embedded.WithEventCache(int64(cfg.DBEventCacheMiB) << 20), embedded.WithReadMmap(int64(cfg.DBReadMmapMiB) << 20),
		embedded.WithMaintenanceDelay(cfg.DBMaintainIdle, cfg.DBMaintainMax)}
	if !events {
		opts = append(opts, embedded.WithoutEvents())
	}
	st, err := embedded.Open(ctx, cfg.DataDir, opts...)
	if errors.Is(err, store.ErrInUse) {
		return nil, fmt.Errorf("open embedded store in %s: the directory is in use by another process — one buzzd at a time opens an embedded store (several pods share PostgreSQL): %w", cfg.DataDir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open embedded store in %s: %w", cfg.DataDir, err)
	}
	logger.Info("store opened", "backend", "sqlite", "data_dir", cfg.DataDir)
	return st, nil
}

// serve runs the relay until ctx is cancelled, then shuts down gracefully:
// the relay closes its WebSockets (1012) and drains in-flight writes, the
// HTTP server stops, and the store is closed last.
func serve(ctx context.Context, cfg Config, logger *slog.Logger) (err error) {
	backend, err := openBackend(ctx, cfg, logger, true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := backend.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close store: %w", cerr))
		}
	}()
	if st, ok := backend.(*embedded.Store); ok {
		defer serveControl(ctx, cfg.DataDir, st, logger)()
	}

	id, created, err := backend.EnsureCommunity(ctx, cfg.RelayHost)
	if err != nil {
		return fmt.Errorf("map RELAY_URL host %s to a community: %w", cfg.RelayHost, err)
	}
	if err := recordMainHost(ctx, backend, cfg); err != nil {
		return err
	}
	logger.Info("community ready", "host", cfg.RelayHost, "community", id.String(), "created", created)

	relayKey, err := deploymentRelayKey(ctx, cfg, backend, logger)
	if err != nil {
		return err
	}

	// The pods' shared parts: broker, control bus, presence, rate limiter,
	// NIP-98 replay guard, and the host cache behind the archive fence
	// (archived on any pod → refused here while a cache may still map it).
	cl, err := openDeployment(ctx, cfg.Cluster, backend, logger)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cl.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close broker: %w", cerr))
		}
	}()

	auth := buzz.AuthOptional
	if cfg.AuthRequired {
		auth = buzz.AuthRequired
	}
	// The NIP-98 HTTP API on community hosts: replays are refused per
	// community, across every pod.
	apiVerifier, err := cl.NIP98Verifier()
	if err != nil {
		return fmt.Errorf("HTTP API: %w", err)
	}
	wfOpts, err := workflowOptions(cfg, backend, logger)
	if err != nil {
		return err
	}
	var redisPing func(context.Context) error
	if cl.Distributed() {
		redisPing = cl.Ping
	}
	metricsOpt, msrv, err := startMetrics(cfg.Metrics, redisPing, communityHost(backend), logger)
	if err != nil {
		return err
	}
	relayOpts := cl.RelayOptions()
	if cfg.RequireRelayMembership {
		relayOpts = append(relayOpts, buzz.WithRelayMembershipRequired())
	}
	relayOpts, err = apiTokens(backend, cl, relayOpts, logger)
	if err != nil {
		return err
	}
	if msrv != nil {
		defer msrv.srv.Close()
		relayOpts = append(relayOpts, metricsOpt)
	}
	relay, err := buzz.New(append(append(relayOpts,
		buzz.WithStore(backend),
		buzz.WithChannels(),
		buzz.WithRelayURL(cfg.RelayURL),
		buzz.WithAuth(auth),
		buzz.WithLimits(cfg.Limits),
		buzz.WithTrustedProxies(cfg.TrustedProxies...),
		buzz.WithKindAllowList(cfg.KindAllowList),
		buzz.WithInfo(cfg.Info),
		buzz.WithLogger(logger),
		buzz.WithLogSummary(cfg.LogSummaryInterval),
		buzz.WithRelayKey(relayKey),
		buzz.WithHTTPAuth(apiVerifier),
		buzz.WithFeature(httpapi.New()),
		buzz.WithFeature(homepage.New()),
		buzz.WithFeature(nip05.New()),
		buzz.WithFeature(audithttp.New()),
		buzz.WithFeature(modhttp.New()),
		buzz.WithFeature(threads.New()),
	), wfOpts...)...)
	if err != nil {
		return fmt.Errorf("relay configuration: %w", err)
	}
	relay.Mux().Handle("GET "+buzz.HealthzPath, relay.HealthzHandler())
	relay.Mux().Handle("GET "+buzz.ReadyzPath, relay.ReadyzHandler())
	if err := mountOwnerAPI(cfg, backend, relay, logger, cl); err != nil {
		_ = relay.Shutdown(ctx)
		return err
	}
	// Archiving closes the community's connections on every pod.
	disconnect, err := control.NewDisconnector(relay)
	if err != nil {
		_ = relay.Shutdown(ctx)
		return err
	}
	handler, err := withOperatorAPI(cfg, backend, cl, disconnect, id, relay, logger)
	if err == nil {
		// Outermost: the admin host is cut before every other route.
		handler, err = withAdminHost(cfg, backend, handler, logger, cl)
	}
	if err != nil {
		_ = relay.Shutdown(ctx)
		return err
	}
	if msrv != nil {
		handler = msrv.rec.InstrumentHTTP(handler)
	}

	ln, err := net.Listen("tcp", cfg.BindAddr)
	if err != nil {
		return fmt.Errorf("listen on BUZZ_BIND_ADDR %s: %w", cfg.BindAddr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	if cfg.DebugAddr != "" {
		dbg, err := startDebugServer(cfg.DebugAddr, logger)
		if err != nil {
			_ = srv.Close()
			<-served
			return err
		}
		defer dbg.Close()
	}
	logger.Info("buzzd listening", "addr", ln.Addr().String(), "relay_url", cfg.RelayURL,
		"auth_required", cfg.AuthRequired, "version", versionString(),
		"verifier", nostr.VerifyBackend)

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	}

	logger.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	var errs []error
	// Shutdown stops the workflow engine first: runs stop at a step
	// boundary and their leases are released for other pods.
	if err := relay.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("relay shutdown: %w", err))
	}
	if err := srv.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("http shutdown: %w", err))
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("http server: %w", err))
	}
	if len(errs) == 0 {
		logger.Info("shutdown complete")
	}
	return errors.Join(errs...)
}

// startDebugServer serves the Go profiler on its own listener, never on the
// relay's address.
func startDebugServer(addr string, logger *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on BUZZ_DEBUG_ADDR %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		logger.Warn("the profiler is reachable beyond loopback", "addr", ln.Addr().String())
	}
	logger.Info("profiler listening", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return srv, nil
}

// redactDatabaseURL returns the URL with any password replaced, for logs.
func redactDatabaseURL(v string) string {
	if u, err := url.Parse(v); err == nil && strings.Contains(v, "://") {
		return u.Redacted()
	}
	return "(keyword/value DSN)"
}

// buildVersion is the module version and short VCS revision of this build,
// e.g. "v0.1.0" or "(devel) 1a2b3c4d5e6f+dirty".
func buildVersion() string {
	version, rev, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		version += " " + rev
		if dirty {
			version += "+dirty"
		}
	}
	return version
}

// versionString names the build for "buzzd version" and the start log,
// including the signature verifier compiled in (nostr.VerifyBackend: purego,
// or libsecp256k1 with -tags libsecp256k1).
func versionString() string {
	return "buzzd " + buildVersion() + " " + runtime.Version() + " verifier=" + nostr.VerifyBackend
}

// recordMainHost records RELAY_URL's host in the store as the deployment's
// main host (store.MainHostStore), so the admin CLI protects the host the
// relay actually serves whatever its own environment says, and refuses to
// go on when that host's community is archived: the relay would answer 404
// on its own address.
func recordMainHost(ctx context.Context, backend store.Backend, cfg Config) error {
	if ms, ok := backend.(store.MainHostStore); ok {
		if err := ms.SetMainHost(ctx, cfg.RelayHost); err != nil {
			return fmt.Errorf("record RELAY_URL host %s as the main host: %w", cfg.RelayHost, err)
		}
	}
	reg, ok := backend.(interface {
		CommunityByHost(ctx context.Context, host string) (store.Community, error)
	})
	if !ok {
		return nil
	}
	c, err := reg.CommunityByHost(ctx, cfg.RelayHost)
	if err != nil {
		return fmt.Errorf("read the community of RELAY_URL host %s: %w", cfg.RelayHost, err)
	}
	if c.Archived() {
		return fmt.Errorf("the community of RELAY_URL host %s (community %s) was archived at %s, so the relay would answer 404 on its own address: unarchive it (buzzd admin community unarchive %s, with this store's DATABASE_URL or BUZZ_DATA_DIR) or set RELAY_URL to the host this relay serves",
			cfg.RelayHost, c.ID, c.ArchivedAt.UTC().Format(time.RFC3339), cfg.RelayHost)
	}
	return nil
}
