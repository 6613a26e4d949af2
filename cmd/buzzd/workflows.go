package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/safehttp"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflowhost"
)

// WorkflowConfig configures the workflow engine (BUZZ_WORKFLOW_*).
type WorkflowConfig struct {
	// Enabled runs the engine (on by default, on both backends).
	Enabled bool
	// Lease is how long a run stays held without a heartbeat: after a pod
	// dies, another takes its runs over once it lapses.
	Lease time.Duration
	// Concurrency is how many runs one process executes at once.
	Concurrency int
	// Poll is how often an idle engine looks for claimable runs.
	Poll time.Duration
	// WebhookAllow are ranges call_webhook may reach although the SSRF
	// guard refuses them (internal receivers an operator trusts).
	WebhookAllow []netip.Prefix
	// MinScheduleInterval is the smallest schedule interval a definition
	// may use: Buzz's 60 s; lower only in tests.
	MinScheduleInterval time.Duration
}

func defaultWorkflowConfig() WorkflowConfig {
	return WorkflowConfig{Enabled: true, Lease: 30 * time.Second, Concurrency: 16, Poll: time.Second,
		MinScheduleInterval: workflow.MinScheduleInterval}
}

func workflowSettings() []setting {
	d := defaultWorkflowConfig()
	return []setting{
		{env: "BUZZ_WORKFLOWS", flag: "workflows", def: "true", isBool: true,
			usage: "run the workflow engine: kind 30620 definitions, 46020 manual runs, message and reaction triggers, durable runs (all pods of a deployment share the runs)",
			apply: func(c *Config, v string) (err error) { c.Workflows.Enabled, err = parseBool(v); return err }},
		{env: "BUZZ_WORKFLOW_LEASE", flag: "workflow-lease", def: fmtDuration(d.Lease),
			usage: "how long a pod holds a workflow run without a heartbeat; when a pod dies another takes its runs over after this (Go duration, 50ms-10m)",
			apply: func(c *Config, v string) error {
				l, err := parsePositiveDuration(v)
				if err == nil && (l < 50*time.Millisecond || l > 10*time.Minute) {
					err = errors.New("want a duration from 50ms to 10m")
				}
				c.Workflows.Lease = l
				return err
			}},
		{env: "BUZZ_WORKFLOW_CONCURRENCY", flag: "workflow-concurrency", def: fmt.Sprint(d.Concurrency),
			usage: "workflow runs one process executes at once (1-10000); further runs wait in the store, never dropped",
			apply: func(c *Config, v string) error {
				n, err := parsePositive(v)
				if err == nil && n > 10000 {
					err = errors.New("want 1-10000")
				}
				c.Workflows.Concurrency = n
				return err
			}},
		{env: "BUZZ_WORKFLOW_POLL", flag: "workflow-poll", def: fmtDuration(d.Poll),
			usage: "how often an idle engine looks for due, orphaned or other pods' runs (Go duration, 10ms-1m)",
			apply: func(c *Config, v string) error {
				p, err := parsePositiveDuration(v)
				if err == nil && (p < 10*time.Millisecond || p > time.Minute) {
					err = errors.New("want a duration from 10ms to 1m")
				}
				c.Workflows.Poll = p
				return err
			}},
		{env: "BUZZ_WORKFLOW_WEBHOOK_ALLOW", flag: "workflow-webhook-allow", def: "(empty)",
			usage: "comma-separated CIDR ranges call_webhook may reach although they are private, loopback or otherwise refused by the SSRF guard (e.g. 10.20.0.0/16 for in-cluster receivers); keep them narrow",
			apply: func(c *Config, v string) error {
				c.Workflows.WebhookAllow = nil
				for _, f := range strings.Split(v, ",") {
					if f = strings.TrimSpace(f); f == "" {
						continue
					}
					p, err := netip.ParsePrefix(f)
					if err != nil {
						return fmt.Errorf("want CIDR ranges such as 10.20.0.0/16: %q", f)
					}
					c.Workflows.WebhookAllow = append(c.Workflows.WebhookAllow, p)
				}
				return nil
			}},
		{env: "BUZZ_WORKFLOW_MIN_SCHEDULE_INTERVAL", flag: "workflow-min-schedule-interval", def: fmtDuration(d.MinScheduleInterval),
			usage: "FOR TESTS ONLY: the smallest interval a schedule trigger may use (whole seconds, 1s-60s); production keeps Buzz's 60s",
			apply: func(c *Config, v string) error {
				m, err := parsePositiveDuration(v)
				if err == nil && (m < time.Second || m > workflow.MinScheduleInterval || m%time.Second != 0) {
					err = errors.New("want whole seconds from 1s to 60s")
				}
				c.Workflows.MinScheduleInterval = m
				return err
			}},
	}
}

// workflowBackend is a store the engine runs on (both of buzzd's are).
type workflowBackend interface {
	workflow.Store
	workflow.Authority
}

// workflowOptions returns the relay options that enable workflows on
// backend (none when BUZZ_WORKFLOWS is off): the workflow host, which runs
// the engine from New until Shutdown.
func workflowOptions(cfg Config, backend store.Backend, logger *slog.Logger) ([]buzz.Option, error) {
	if !cfg.Workflows.Enabled {
		logger.Info("workflow engine disabled (BUZZ_WORKFLOWS=false)")
		return nil, nil
	}
	st, ok := backend.(workflowBackend)
	if !ok {
		return nil, fmt.Errorf("workflows: the %T store keeps no workflows (set BUZZ_WORKFLOWS=false)", backend)
	}
	caller, err := safehttp.New(safehttp.WithAllowedPrefixes(cfg.Workflows.WebhookAllow...))
	if err != nil {
		return nil, fmt.Errorf("workflows: %w", err)
	}
	opts := []workflow.Option{
		workflow.WithLogger(logger),
		workflow.WithAuthority(st),
		workflow.WithLease(cfg.Workflows.Lease, 0),
		workflow.WithConcurrency(cfg.Workflows.Concurrency),
		workflow.WithPollInterval(cfg.Workflows.Poll),
		workflow.WithMinScheduleInterval(cfg.Workflows.MinScheduleInterval),
	}
	if cfg.Cluster.PodName != "" {
		opts = append(opts, workflow.WithWorkerName(cfg.Cluster.PodName))
	}
	wf, err := workflowhost.New(st, workflowhost.WithEngineOptions(opts...),
		workflowhost.WithWebhookCaller(workflow.SafeHTTPWebhooks(caller)))
	if err != nil {
		return nil, err
	}
	return []buzz.Option{buzz.WithFeature(wf)}, nil
}
