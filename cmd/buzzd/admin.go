package main

import (
	"errors"
	"fmt"
	"github.com/buzzrelay/buzz/cluster"
	"log/slog"
	"net/http"

	"github.com/buzzrelay/buzz/admin"
	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/store"
)

// adminSettings are the admin host's configuration keys (package admin).
func adminSettings() []setting {
	return []setting{
		{env: "BUZZ_ADMIN_HOST", flag: "admin-host", def: "(unset: every admin route is a plain 404)",
			usage: "one exact host[:port] served only as the operators' read-only console (GET /reports: open reports of every community; GET /feedback: product feedback, kind 42000), NIP-98 from RELAY_OPERATOR_PUBKEYS; cut before every public route (no WebSocket, NIP-11 or community route); requires RELAY_OPERATOR_PUBKEYS",
			apply: func(c *Config, v string) error {
				h, err := admin.NormalizeHost(v)
				if err != nil {
					return errors.New("must be a bare host name or IP literal with an optional port")
				}
				c.AdminHost = h
				return nil
			}},
	}
}

// validateAdminHost checks the admin host against the settings it depends on.
func validateAdminHost(cfg Config) error {
	if cfg.AdminHost == "" {
		return nil
	}
	if len(cfg.Operator.PubKeys) == 0 {
		return errors.New("BUZZ_ADMIN_HOST (-admin-host) requires RELAY_OPERATOR_PUBKEYS: only operators read the admin host")
	}
	if cfg.AdminHost == cfg.RelayHost {
		return errors.New("BUZZ_ADMIN_HOST (-admin-host) must not be RELAY_URL's host: the admin host is cut off from the relay")
	}
	if _, host, err := operator.ParseOrigin(cfg.Operator.APIOrigin); err == nil && host == cfg.AdminHost {
		return errors.New("BUZZ_ADMIN_HOST (-admin-host) must not be the operator API's host")
	}
	return nil
}

// withAdminHost wraps next with the admin host when one is configured. Its
// origin's scheme follows RELAY_URL (Config.httpScheme); NIP-98 tokens are
// spent once across the deployment cl.
func withAdminHost(cfg Config, backend store.Backend, next http.Handler, logger *slog.Logger, cl *cluster.Deployment) (http.Handler, error) {
	if cfg.AdminHost == "" {
		return next, nil
	}
	st, ok := backend.(admin.Store)
	if !ok {
		return nil, errors.New("admin host: the store keeps no report queue or product feedback")
	}
	v, err := cl.NIP98Verifier()
	if err != nil {
		return nil, fmt.Errorf("admin host: %w", err)
	}
	scheme := cfg.httpScheme()
	h, err := admin.New(admin.WithHost(cfg.AdminHost), admin.WithScheme(scheme), admin.WithOperators(cfg.Operator.PubKeys...),
		admin.WithStore(st), admin.WithVerifier(v), admin.WithLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("admin host: %w", err)
	}
	logger.Info("admin host enabled", "host", cfg.AdminHost, "origin", scheme+"://"+cfg.AdminHost)
	return h.Wrap(next), nil
}
