package main

import (
	"errors"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/nostr"
)

// relayKeySettings configures the relay's master key: each community's
// relay-signed channel state (NIP-29 kinds 39000–39003) is signed with a key
// derived from it for that community, and NIP-11 names its public key.
func relayKeySettings() []setting {
	return []setting{
		{env: "BUZZ_RELAY_PRIVATE_KEY", flag: "relay-private-key", def: "(unset: ephemeral key, logged warning)", secret: true,
			usage: "relay master secret key (64 hex); per-community keys signing channel state events are derived from it, and NIP-11 pubkey is its public key",
			apply: func(c *Config, v string) error {
				sk, err := nostr.ParseSecretKey(v)
				if err != nil {
					return errors.New("must be a secp256k1 secret key as 64 hex characters")
				}
				c.RelayKey = &sk
				return nil
			}},
	}
}

// relayKeyOptions returns the relay options of cfg's master key.
func relayKeyOptions(cfg Config) []buzz.Option {
	if cfg.RelayKey == nil {
		return nil
	}
	return []buzz.Option{buzz.WithRelayKey(*cfg.RelayKey)}
}
