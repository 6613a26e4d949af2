package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// relayKeySettings configures the relay's master key: each community's
// relay-signed channel state (NIP-29 kinds 39000–39003) is signed with a key
// derived from it for that community, and NIP-11 names its public key.
func relayKeySettings() []setting {
	return []setting{
		{env: "BUZZ_RELAY_PRIVATE_KEY", flag: "relay-private-key", def: "(unset: the stored deployment key; generated on first start)", secret: true,
			usage: "relay master secret key (64 hex or nsec); per-community keys signing channel state events are derived from it, and NIP-11 pubkey is its public key. buzzd keeps the deployment's key in the store (BUZZ_DATA_DIR/relay.key, mode 0600, or the PostgreSQL table deployment_keys); when set, it is stored on first start and must equal the stored key afterwards, else buzzd refuses to start",
			apply: func(c *Config, v string) error {
				sk, err := nostr.ParseSecretKeyAny(v)
				if err != nil {
					return errors.New("must be a secp256k1 secret key as 64 hex characters or an nsec")
				}
				c.RelayKey = &sk
				return nil
			}},
	}
}

// relayKeyStore keeps the deployment's relay master key: store/embedded in
// the data directory, store/postgres in the database. RelayKey stores
// candidate when no key is stored yet and returns the stored key.
type relayKeyStore interface {
	RelayKey(ctx context.Context, candidate nostr.SecretKey) (nostr.SecretKey, error)
}

// deploymentRelayKey returns the relay master key every process of the
// deployment signs with: the one stored with the data, stored on first
// start from BUZZ_RELAY_PRIVATE_KEY or, without it, a new random key. A
// configured key that differs from the stored one is an error: this
// process would sign every community's channel state with another key than
// its peers (or than before its restart). Only public keys are logged.
func deploymentRelayKey(ctx context.Context, cfg Config, backend store.Backend, logger *slog.Logger) (nostr.SecretKey, error) {
	ks, ok := backend.(relayKeyStore)
	if !ok {
		return nostr.SecretKey{}, errors.New("relay key: the store cannot keep the deployment's relay key")
	}
	var candidate nostr.SecretKey
	if cfg.RelayKey != nil {
		candidate = *cfg.RelayKey
	} else {
		var err error
		if candidate, err = nostr.GenerateSecretKey(); err != nil {
			return nostr.SecretKey{}, fmt.Errorf("relay key: %w", err)
		}
	}
	sk, err := ks.RelayKey(ctx, candidate)
	if err != nil {
		return nostr.SecretKey{}, fmt.Errorf("relay key: %w", err)
	}
	if cfg.RelayKey != nil && sk != *cfg.RelayKey {
		return nostr.SecretKey{}, fmt.Errorf("BUZZ_RELAY_PRIVATE_KEY (public key %s) differs from the deployment's stored relay key (public key %s): every process must sign with the stored key; unset BUZZ_RELAY_PRIVATE_KEY or set it to the stored key",
			cfg.RelayKey.PublicKey(), sk.PublicKey())
	}
	source := "stored"
	switch {
	case sk == candidate && cfg.RelayKey != nil:
		source = "configured"
	case sk == candidate:
		source = "generated and stored"
	}
	logger.Info("relay key ready", "pubkey", sk.PublicKey(), "source", source)
	return sk, nil
}
