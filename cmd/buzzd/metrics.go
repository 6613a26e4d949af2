package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/metrics"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// communityHost returns a lookup of a community's current host from the
// backend's registry, or nil when the backend keeps none.
func communityHost(backend store.Backend) func(context.Context, tenant.CommunityID) (string, error) {
	reg, ok := backend.(interface {
		CommunityByID(context.Context, tenant.CommunityID) (store.Community, error)
	})
	if !ok {
		return nil
	}
	return func(ctx context.Context, id tenant.CommunityID) (string, error) {
		c, err := reg.CommunityByID(ctx, id)
		return c.Host, err
	}
}

// MetricsConfig configures the Prometheus endpoint (package metrics).
type MetricsConfig struct {
	// Addr is the host:port of the separate metrics listener
	// (BUZZ_METRICS_ADDR); "" disables metrics. Metrics are never served
	// on the public listener: an unauthenticated endpoint on a community's
	// host would leak every tenant's usage to every other.
	Addr string
	// PerCommunity is BUZZ_USAGE_METRICS_PER_COMMUNITY.
	PerCommunity metrics.Mode
}

func metricsSettings() []setting {
	return []setting{
		{env: "BUZZ_METRICS_ADDR", flag: "metrics-addr", def: "(unset)",
			usage: "host:port of a separate listener serving Prometheus metrics at /metrics, never on the public listener; unset = no metrics",
			apply: func(c *Config, v string) error {
				if err := validateBindAddr(v); err != nil {
					return err
				}
				c.Metrics.Addr = v
				return nil
			}},
		{env: "BUZZ_USAGE_METRICS_PER_COMMUNITY", flag: "usage-metrics-per-community", def: "all",
			usage: "per-community usage series, labelled by the community's host: all (every community), off (fleet series only) or top:K (the K communities with the most events received since the last minute's ranking, the rest as host=\"_other\"); any other value logs a warning and uses all",
			apply: func(c *Config, v string) error {
				m, err := metrics.ParseMode(v)
				if err != nil {
					m = metrics.ModeAll
					c.Warnings = append(c.Warnings, fmt.Sprintf("BUZZ_USAGE_METRICS_PER_COMMUNITY %q is not all, off or top:K (K 1-%d); using all", v, metrics.MaxTopK))
				}
				c.Metrics.PerCommunity = m
				return nil
			}},
	}
}

// metricsServer is the running metrics listener.
type metricsServer struct {
	srv  *http.Server
	addr string
	rec  *metrics.Recorder
}

// startMetrics builds the Recorder the relay reports to and serves its
// registry (with the Go runtime and process collectors) on cfg.Addr. It
// returns a nil option and server when metrics are off. redisPing, when
// not nil, feeds buzz_redis_up; hostOf, when not nil, keeps the
// per-community host labels current.
func startMetrics(cfg MetricsConfig, redisPing func(context.Context) error, hostOf func(context.Context, tenant.CommunityID) (string, error), logger *slog.Logger) (buzz.Option, *metricsServer, error) {
	if cfg.Addr == "" {
		return nil, nil, nil
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	opts := []metrics.Option{metrics.WithPerCommunity(cfg.PerCommunity)}
	if redisPing != nil {
		opts = append(opts, metrics.WithRedisPing(redisPing))
	}
	if hostOf != nil {
		opts = append(opts, metrics.WithHostOf(hostOf))
	}
	rec, err := metrics.New(reg, opts...)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on BUZZ_METRICS_ADDR %s: %w", cfg.Addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	logger.Info("metrics listening", "url", "http://"+ln.Addr().String()+"/metrics", "per_community", cfg.PerCommunity.String())
	return buzz.WithMetrics(rec), &metricsServer{srv: srv, addr: ln.Addr().String(), rec: rec}, nil
}
