//go:build cgo && !purego && !btcec

package nostr

import (
	"github.com/buzzrelay/buzz/nostr/internal/libsecp256k1"
)

// VerifyBackend names the signature verification backend of this build.
const VerifyBackend = "libsecp256k1"

// liftedKey is a public key after lift_x, in libsecp256k1's parsed form.
type liftedKey struct {
	x  [32]byte
	pk libsecp256k1.XOnlyPubKey
}

// backendSelfTest runs libsecp256k1's own self test, which it asks for
// before its static context is used (a failure aborts the process).
func backendSelfTest() error {
	libsecp256k1.SelfTest()
	return nil
}

// liftX performs BIP-340 lift_x via secp256k1_xonly_pubkey_parse, failing if
// x is not a valid coordinate (x >= p included).
func liftX(x *[32]byte) (*liftedKey, bool) {
	k := &liftedKey{x: *x}
	if !libsecp256k1.ParseXOnlyPubKey(&k.pk, x) {
		return nil, false
	}
	return k, true
}

// verifySig checks a BIP-340 signature of the 32-byte msg by key with
// libsecp256k1's secp256k1_schnorrsig_verify, run on its static context.
func (v *Verifier) verifySig(key *liftedKey, msg *[32]byte, sig *[64]byte) bool {
	return key.pk.VerifySchnorr(sig, msg)
}
