package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/cluster"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// OperatorConfig configures the operator API (package operator).
type OperatorConfig struct {
	// PubKeys are the operators' public keys (RELAY_OPERATOR_PUBKEYS,
	// lowercase hex). Empty disables the API.
	PubKeys []string
	// APIOrigin is the API's canonical origin (RELAY_OPERATOR_API_ORIGIN),
	// normalized; required when PubKeys is not empty.
	APIOrigin string
	// MaxCommunitiesPerOwner is the per-owner provisioning quota
	// (BUZZ_MAX_COMMUNITIES_PER_OWNER).
	MaxCommunitiesPerOwner int
}

// operatorSettings are the operator API's configuration keys.
func operatorSettings() []setting {
	return []setting{
		{env: "RELAY_OPERATOR_PUBKEYS", flag: "operator-pubkeys", def: "(empty: operator API disabled)",
			usage: "comma-separated public keys (hex or npub) allowed to use the NIP-98 operator API (/operator/communities…); an invalid key is a start-up error",
			apply: func(c *Config, v string) error {
				keys, err := parseOperatorKeys(v)
				if err != nil {
					return err
				}
				c.Operator.PubKeys = keys
				return nil
			}},
		{env: "RELAY_OPERATOR_API_ORIGIN", flag: "operator-api-origin", def: "(unset)",
			usage: "bare http(s) origin of the operator API, e.g. https://ops.example; every operator NIP-98 u tag must name it, and the API answers on its host; required with RELAY_OPERATOR_PUBKEYS",
			apply: func(c *Config, v string) error {
				origin, _, err := operator.ParseOrigin(v)
				if err != nil {
					return errors.New("must be a bare http(s) origin such as https://ops.example (no path, query, fragment or user info)")
				}
				c.Operator.APIOrigin = origin
				return nil
			}},
		{env: "BUZZ_MAX_COMMUNITIES_PER_OWNER", flag: "max-communities-per-owner", def: strconv.Itoa(operator.DefaultMaxCommunitiesPerOwner),
			usage: "active communities one owner may hold through the operator API",
			apply: func(c *Config, v string) error {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || n < 1 || n > 1_000_000 {
					return errors.New("want an integer from 1 to 1000000")
				}
				c.Operator.MaxCommunitiesPerOwner = n
				return nil
			}},
	}
}

// parseOperatorKeys splits a comma-separated key list. Blank entries
// (such as a trailing comma) are ignored; anything else must be 64 hex
// characters or an npub, and is returned as lowercase hex.
func parseOperatorKeys(v string) ([]string, error) {
	var keys []string
	for i, k := range strings.Split(v, ",") {
		if strings.TrimSpace(k) == "" {
			continue
		}
		pk, err := nostr.ParsePubKey(k)
		if err != nil {
			return nil, fmt.Errorf("entry %d is not a public key (64 hex characters or npub1…)", i+1)
		}
		keys = append(keys, pk)
	}
	return keys, nil
}

// validate checks the settings that depend on each other.
func (o OperatorConfig) validate() error {
	if len(o.PubKeys) > 0 && o.APIOrigin == "" {
		return errors.New("RELAY_OPERATOR_API_ORIGIN (-operator-api-origin) is required when RELAY_OPERATOR_PUBKEYS is set")
	}
	return nil
}

// withOperatorAPI returns relay wrapped with the operator API when operators
// are configured, else relay itself. bootID is the community of RELAY_URL,
// which cannot be archived; dir's cache is invalidated on every mapping
// change; archive disconnects through d. NIP-98 tokens are spent once
// across the deployment cl.
func withOperatorAPI(cfg Config, backend store.Backend, cl *cluster.Deployment, d operator.Disconnector,
	bootID tenant.CommunityID, relay *buzz.Relay, logger *slog.Logger) (http.Handler, error) {
	if len(cfg.Operator.PubKeys) == 0 {
		return relay, nil
	}
	st, ok := backend.(operator.Store)
	if !ok {
		return nil, errors.New("operator API: the store does not implement the operator registry")
	}
	v, err := cl.NIP98Verifier()
	if err != nil {
		return nil, fmt.Errorf("operator API: %w", err)
	}
	maxOwned := cfg.Operator.MaxCommunitiesPerOwner
	if maxOwned == 0 {
		maxOwned = operator.DefaultMaxCommunitiesPerOwner
	}
	opts := []operator.Option{}
	if ss, ok := backend.(operator.SettingsStore); ok {
		opts = append(opts, operator.WithSettingsStore(ss))
	}
	h, err := operator.New(append(opts,
		operator.WithOperators(cfg.Operator.PubKeys...),
		operator.WithAPIOrigin(cfg.Operator.APIOrigin),
		operator.WithStore(st),
		operator.WithVerifier(v),
		operator.WithMaxCommunitiesPerOwner(maxOwned),
		operator.WithProtectedCommunities(bootID),
		operator.WithDisconnector(d),
		operator.WithHostInvalidator(cl.InvalidateHost),
		operator.WithControlPublisher(relay),
		operator.WithLogger(logger),
	)...)
	if err != nil {
		return nil, fmt.Errorf("operator API: %w", err)
	}
	logger.Info("operator API enabled", "origin", h.Origin(), "operators", len(cfg.Operator.PubKeys),
		"max_communities_per_owner", maxOwned)
	return h.Wrap(relay), nil
}

// mountOwnerAPI serves the owner API (operator.OwnerAPI: a community's
// owner sets its profile and access policy with NIP-98 on its own host) on
// every community host, its NIP-98 tokens spent once across the deployment
// cl.
func mountOwnerAPI(cfg Config, backend store.Backend, relay *buzz.Relay, logger *slog.Logger, cl *cluster.Deployment) error {
	reg, ok1 := backend.(operator.Store)
	ss, ok2 := backend.(operator.SettingsStore)
	if !ok1 || !ok2 {
		return nil // the store keeps no owners or settings
	}
	v, err := cl.NIP98Verifier()
	if err != nil {
		return fmt.Errorf("owner API: %w", err)
	}
	scheme := cfg.httpScheme()
	api, err := operator.NewOwnerAPI(operator.OwnerConfig{Registry: reg, Settings: ss, Verifier: v, Publisher: relay, Scheme: scheme, Logger: logger})
	if err != nil {
		return fmt.Errorf("owner API: %w", err)
	}
	for _, p := range api.Patterns() {
		relay.HandleCommunity(p, api.ServeCommunity)
	}
	return nil
}
