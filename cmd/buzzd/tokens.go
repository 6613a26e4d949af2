package main

// buzzd admin token: mint, list and revoke a community's API tokens
// (package apitoken) next to the store.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/apitoken/tokenhttp"
	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/cluster"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store"
)

// tokenJSON is a token in -json output: its record as the HTTP routes
// show it (apitoken.View, Token only when minted), with the community
// and what the command did.
type tokenJSON struct {
	apitoken.View
	CommunityID string `json:"community_id"`
	Host        string `json:"host"`
	Status      string `json:"status,omitempty"`
}

func tokenToJSON(t store.APIToken, host string) tokenJSON {
	return tokenJSON{View: apitoken.NewView(t), CommunityID: t.Community.String(), Host: host}
}

// parseLifetime reads -expires: a Go duration ("12h") or a number of days
// ("30d"); "" or "never" is no expiry.
func parseLifetime(v string) (time.Duration, error) {
	switch v {
	case "", "never":
		return 0, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, errors.New("-expires: want a number of days (30d), a duration (12h) or never")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errors.New("-expires: want a number of days (30d), a duration (12h) or never")
	}
	return d, nil
}

// tokens returns the token service over the admin store. It publishes
// nothing itself: revocations reach the pods through tellPods.
func (a *adminCmd) tokens() (*apitoken.Service, error) {
	ts, ok := a.st.(store.TokenStore)
	if !ok {
		return nil, errors.New("admin: the store keeps no API tokens")
	}
	return apitoken.New(ts, apitoken.WithLogger(a.log))
}

func (a *adminCmd) tokenMint(ctx context.Context, raw, pkRaw string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	pk, err := nostr.ParsePubKey(pkRaw)
	if err != nil {
		return usageError{err: errors.New("PUBKEY: want 64 hex characters or an npub"), help: "buzzd admin help token"}
	}
	if a.flags.scopes == "" {
		return usageError{err: errors.New("token mint: -scopes is required (" + strings.Join(apitoken.Strings(apitoken.All()), ",") + ")"), help: "buzzd admin help token"}
	}
	scopes, err := apitoken.ParseScopes(a.flags.scopes)
	if err != nil {
		return usageError{err: fmt.Errorf("-scopes: %s", strings.TrimPrefix(err.Error(), "invalid: ")), help: "buzzd admin help token"}
	}
	ttl, err := parseLifetime(a.flags.expires)
	if err != nil {
		return usageError{err: err, help: "buzzd admin help token"}
	}
	// Tokens are minted by a community's owner or admins: an -actor must
	// be one; without it a local administrator mints.
	if actor := audit.ActorFrom(ctx); actor != "" {
		role, ok, err := a.st.CommunityRole(ctx, c.ID, actor)
		if err != nil {
			return err
		}
		if !ok || !apitoken.MayMint(role) {
			return fmt.Errorf("admin: token mint: -actor %s is not the owner or an admin of %s", npubOr(actor), c.Host)
		}
	}
	name := a.flags.profile["name"]
	if name == "" {
		name = "token"
	}
	svc, err := a.tokens()
	if err != nil {
		return err
	}
	token, t, err := svc.Mint(ctx, c.ID, apitoken.MintRequest{PubKey: pk, Name: name, Scopes: scopes, ExpiresIn: ttl})
	switch {
	case errors.Is(err, store.ErrTokenLimit):
		return fmt.Errorf("admin: token mint: %s already holds %d active tokens in %s; revoke one first", npubOr(pk), store.MaxActiveTokens, c.Host)
	case err != nil:
		return fmt.Errorf("admin: token mint: %s", strings.TrimPrefix(err.Error(), "invalid: "))
	}
	if a.flags.json {
		j := tokenToJSON(t, c.Host)
		j.Token, j.Status = token, "minted"
		return writeJSONLine(a.out, j)
	}
	expires := "never"
	if !t.ExpiresAt.IsZero() {
		expires = t.ExpiresAt.UTC().Format(time.RFC3339)
	}
	_, err = fmt.Fprintf(a.out, "minted token %s of %s acting as %s, scopes %s, expires %s\n%s\nThe token is shown once: buzzd keeps only its SHA-256.\n",
		t.ID, c.Host, npubOr(pk), strings.Join(t.Scopes, ","), expires, token)
	return err
}

func (a *adminCmd) tokenList(ctx context.Context, raw string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	svc, err := a.tokens()
	if err != nil {
		return err
	}
	ts, err := svc.List(ctx, c.ID)
	if err != nil {
		return err
	}
	if a.flags.json {
		out := make([]tokenJSON, 0, len(ts))
		for _, t := range ts {
			out = append(out, tokenToJSON(t, c.Host))
		}
		return writeJSONLine(a.out, out)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPUBKEY\tSCOPES\tCREATED\tEXPIRES\tSTATE")
	for _, t := range ts {
		expires, state := "never", "active"
		if !t.ExpiresAt.IsZero() {
			expires = t.ExpiresAt.UTC().Format(time.RFC3339)
		}
		switch {
		case t.Revoked():
			state = "revoked " + t.RevokedAt.UTC().Format(time.RFC3339)
		case t.Expired(now):
			state = "expired"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, npubOr(t.Owner), strings.Join(t.Scopes, ","),
			t.CreatedAt.UTC().Format(time.RFC3339), expires, state)
	}
	return tw.Flush()
}

func (a *adminCmd) tokenRevoke(ctx context.Context, raw, id string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	svc, err := a.tokens()
	if err != nil {
		return err
	}
	t, changed, err := svc.Revoke(ctx, c.ID, id)
	if errors.Is(err, store.ErrNoToken) {
		return fmt.Errorf("admin: token revoke: %s has no token %s", c.Host, id)
	}
	if err != nil {
		return err
	}
	// Every pod closes the connections that authenticated with it; HTTP
	// requests are refused at once (each looks the token up).
	a.tellPods(ctx, c.ID, control.TokenRevoked{Token: t.ID})
	status := "revoked"
	if !changed {
		status = "already_revoked"
	}
	if a.flags.json {
		j := tokenToJSON(t, c.Host)
		j.Status = status
		return writeJSONLine(a.out, j)
	}
	_, err = fmt.Fprintf(a.out, "%s: token %s of %s (acting as %s)\n", strings.ReplaceAll(status, "_", " "), t.ID, c.Host, npubOr(t.Owner))
	return err
}

// apiTokens returns relayOpts with the options that accept the store's
// API tokens (package apitoken) and serve their owners' and admins' routes
// (package tokenhttp), and the control bus their revocations travel on:
// the deployment's (Redis) when there is one, else an in-process bus given
// to the relay as well.
func apiTokens(backend store.Backend, cl *cluster.Deployment, relayOpts []buzz.Option, logger *slog.Logger) ([]buzz.Option, error) {
	ts, ok := backend.(store.TokenStore)
	if !ok {
		return nil, errors.New("API tokens: the store keeps no API tokens")
	}
	bus, ok := cl.Broker().(control.Bus)
	if !ok {
		local := &control.Local{}
		bus = local
		relayOpts = append(relayOpts, buzz.WithControlBus(local))
	}
	svc, err := apitoken.New(ts, apitoken.WithBus(bus), apitoken.WithLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("API tokens: %w", err)
	}
	return append(relayOpts, buzz.WithAPITokens(svc), buzz.WithFeature(tokenhttp.New(svc))), nil
}
