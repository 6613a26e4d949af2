package buzz

import (
	"errors"

	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/nostr"
)

// WithTracer records the isolation conformance trace of every connection:
// f is called once per bound connection and receives that connection's
// steps (see conformance/trace). The default records nothing, at no cost.
func WithTracer(f trace.Factory) Option {
	return func(c *config) error {
		if f == nil {
			return errors.New("buzz: WithTracer: nil factory")
		}
		c.tracer = f
		return nil
	}
}

// WithRelayKey sets the relay's master key. Each community's relay-signed
// events (NIP-29 channel state, kinds 39000–39003) are signed with a key
// derived from it for that community (see relaykey.Derive); the relay-wide
// NIP-11 document advertises its public key, a community's hosts the
// community's derived key ("self", and "pubkey" unless WithInfo names one).
// Without it, New uses the key the store keeps for the deployment (both
// store/embedded and store/postgres keep one: a store with a
// RelayKey(ctx, candidate) method), storing a new random key on the
// deployment's first start, so every process and every restart signs
// alike. With a store that keeps none, New generates an ephemeral master
// key and logs a warning: state events then change signer at every start.
func WithRelayKey(sk nostr.SecretKey) Option {
	return func(c *config) error {
		if _, err := nostr.ParseSecretKey(sk.Hex()); err != nil {
			return errors.New("buzz: WithRelayKey: invalid secret key")
		}
		c.relayKey = sk
		c.hasRelayKey = true
		return nil
	}
}
