package nostr

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/dgraph-io/ristretto/v2"
)

// Verification failures. Their texts are ready for an OK message.
var (
	ErrIDMismatch   = errors.New("invalid: event id does not match its content")
	ErrBadSignature = errors.New("invalid: bad signature")
)

// DefaultPubKeyCacheSize is the number of parsed public keys a Verifier keeps
// unless WithPubKeyCacheSize says otherwise.
const DefaultPubKeyCacheSize = 65536

// Verifier checks event ids and BIP-340 signatures. Parsed public keys (the
// costly lift_x step) are kept in a bounded ristretto cache, so a repeat
// author is verified faster. A Verifier is safe for concurrent use; call
// Close when done with it to stop the cache's goroutines.
//
// The signature backend is chosen at build time (see VerifyBackend): pure
// Go by default, the system libsecp256k1 through cgo with the
// "libsecp256k1" build tag.
type Verifier struct {
	cache        *ristretto.Cache[string, *liftedKey]
	challengeTag [64]byte // sha256("BIP0340/challenge") twice
	batches      batcher  // VerifyConcurrent's
	combs        combBuilds
}

type verifierConfig struct {
	cacheSize    int
	cacheMetrics bool // the cache keeps ristretto's metrics (tests read the cost held)
}

// VerifierOption configures a Verifier.
type VerifierOption func(*verifierConfig) error

// WithPubKeyCacheSize sets how many parsed public keys the Verifier keeps
// (default DefaultPubKeyCacheSize). Zero disables the cache; a negative size
// is an error.
func WithPubKeyCacheSize(n int) VerifierOption {
	return func(c *verifierConfig) error {
		if n < 0 {
			return fmt.Errorf("nostr: public key cache size must not be negative, got %d", n)
		}
		c.cacheSize = n
		return nil
	}
}

// NewVerifier returns a Verifier configured by opts.
func NewVerifier(opts ...VerifierOption) (*Verifier, error) {
	cfg := verifierConfig{cacheSize: DefaultPubKeyCacheSize}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := backendSelfTest(); err != nil {
		return nil, err
	}
	v := &Verifier{}
	v.batches.calls.New = newVerifyCall
	v.combs.init()
	tag := sha256.Sum256([]byte("BIP0340/challenge"))
	copy(v.challengeTag[:32], tag[:])
	copy(v.challengeTag[32:], tag[:])
	if cfg.cacheSize > 0 {
		c, err := ristretto.NewCache(&ristretto.Config[string, *liftedKey]{
			NumCounters:        int64(cfg.cacheSize) * 10,
			MaxCost:            int64(cfg.cacheSize),
			BufferItems:        64,
			IgnoreInternalCost: true,
			Metrics:            cfg.cacheMetrics,
		})
		if err != nil {
			return nil, fmt.Errorf("nostr: public key cache: %w", err)
		}
		v.cache = c
	}
	return v, nil
}

// Close waits for the key tables being built and releases the public key
// cache. The Verifier must not be used after.
func (v *Verifier) Close() {
	v.combs.wait()
	if v.cache != nil {
		v.cache.Close()
	}
}

// Verify checks that e.ID is the hash of the event's content
// (ErrIDMismatch otherwise) and that e.Sig is a valid BIP-340 signature of
// that id by e.PubKey (ErrBadSignature otherwise, also for a pubkey that is
// not on the curve or a malformed sig).
func (v *Verifier) Verify(e *Event) error {
	it, err := v.sigItemOf(e)
	if err != nil {
		return err
	}
	if !v.verifySig(it.key, &it.msg, &it.sig) {
		return ErrBadSignature
	}
	return nil
}

// sigItemOf checks e's id and decodes its signature and key, what Verify
// and a batch check before the signature itself: ErrIDMismatch when the
// id is not the hash of the event, ErrBadSignature when the signature is
// not hex or the pubkey not a point of the curve.
func (v *Verifier) sigItemOf(e *Event) (sigItem, error) {
	var it sigItem
	if !DecodeLowerHex(it.msg[:], e.ID) || it.msg != e.hash() {
		return it, ErrIDMismatch
	}
	if !DecodeLowerHex(it.sig[:], e.Sig) {
		return it, ErrBadSignature
	}
	key, ok := v.lookup(e.PubKey)
	if !ok {
		return it, ErrBadSignature
	}
	it.key = key
	return it, nil
}

// lookup returns the lifted public key for hex pubkey, from the cache when
// possible.
func (v *Verifier) lookup(pubkey string) (*liftedKey, bool) {
	if v.cache != nil {
		if k, ok := v.cache.Get(pubkey); ok && k != nil && k.matches(pubkey) {
			return k, true
		}
	}
	var x [32]byte
	if !DecodeLowerHex(x[:], pubkey) {
		return nil, false
	}
	k, ok := liftX(&x)
	if !ok {
		return nil, false
	}
	if v.cache != nil {
		v.cache.Set(pubkey, k, 1)
	}
	return k, true
}

// matches guards against a cache hash collision handing back another key.
func (k *liftedKey) matches(pubkey string) bool {
	var x [32]byte
	return DecodeLowerHex(x[:], pubkey) && x == k.x
}

// challenge computes the BIP-340 challenge hash
// sha256(tag || tag || r || P || m) without allocating.
func (v *Verifier) challenge(r []byte, px *[32]byte, msg *[32]byte) [32]byte {
	var buf [64 + 32 + 32 + 32]byte
	copy(buf[:64], v.challengeTag[:])
	copy(buf[64:96], r)
	copy(buf[96:128], px[:])
	copy(buf[128:], msg[:])
	return sha256.Sum256(buf[:])
}

// VerifyDigest checks that sig (128 lowercase hex characters) is a valid
// BIP-340 signature of the 32-byte digest by pubkey; ErrBadSignature
// otherwise. Signatures over something other than an event id (an owner
// attestation, NIP-OA) are checked with it.
func (v *Verifier) VerifyDigest(pubkey string, digest [32]byte, sig string) error {
	var s [64]byte
	if !DecodeLowerHex(s[:], sig) {
		return ErrBadSignature
	}
	key, ok := v.lookup(pubkey)
	if !ok || !v.verifySig(key, &digest, &s) {
		return ErrBadSignature
	}
	return nil
}
