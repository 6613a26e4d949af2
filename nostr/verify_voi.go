//go:build (!cgo || purego) && !btcec

package nostr

import (
	"gitlab.com/yawning/secp256k1-voi/secec/bitcoin"
)

// VerifyBackend names the signature verification backend of this build.
const VerifyBackend = "secp256k1-voi"

// liftedKey is a public key after lift_x: secp256k1-voi's parsed x-only
// key (its point has the even y).
type liftedKey struct {
	x  [32]byte
	pk *bitcoin.SchnorrPublicKey
}

func backendSelfTest() error { return nil }

// liftX performs BIP-340 lift_x: the curve point with x coordinate x and an
// even y, failing if x is not a valid coordinate (x >= p included).
func liftX(x *[32]byte) (*liftedKey, bool) {
	pk, err := bitcoin.NewSchnorrPublicKey(x[:])
	if err != nil {
		return nil, false
	}
	return &liftedKey{x: *x, pk: pk}, true
}

// verifySig checks a BIP-340 signature of the 32-byte msg by key with
// secp256k1-voi's BIP-340 verification (r < p, s < n, R = s*G - e*P
// finite with even y and x(R) = r), whose s*G - e*P is a variable-time
// double-scalar multiplication on formally verified field arithmetic.
func (v *Verifier) verifySig(key *liftedKey, msg *[32]byte, sig *[64]byte) bool {
	return key.pk.Verify(msg[:], sig[:])
}
