//go:build btcec

package nostr

import (
	"github.com/btcsuite/btcd/btcec/v2"
)

// VerifyBackend names the signature verification backend of this build.
const VerifyBackend = "btcec"

// liftedKey is a public key after lift_x: the affine point with even y.
type liftedKey struct {
	x [32]byte
	p btcec.JacobianPoint
}

func backendSelfTest() error { return nil }

// liftX performs BIP-340 lift_x: the curve point with x coordinate x and an
// even y, failing if x is not a valid coordinate.
func liftX(x *[32]byte) (*liftedKey, bool) {
	var compressed [33]byte
	compressed[0] = 0x02
	copy(compressed[1:], x[:])
	pub, err := btcec.ParsePubKey(compressed[:])
	if err != nil {
		return nil, false
	}
	k := &liftedKey{x: *x}
	pub.AsJacobian(&k.p)
	return k, true
}

// verifySig checks a BIP-340 signature of the 32-byte msg by key:
// with r = sig[0:32] < p, s = sig[32:64] < n and e = challenge(r, P, m),
// R = s*G - e*P must be a finite point with even y and x(R) = r.
func (v *Verifier) verifySig(key *liftedKey, msg *[32]byte, sig *[64]byte) bool {
	var r btcec.FieldVal
	if overflow := r.SetByteSlice(sig[:32]); overflow {
		return false
	}
	var s btcec.ModNScalar
	if overflow := s.SetByteSlice(sig[32:]); overflow {
		return false
	}
	ch := v.challenge(sig[:32], &key.x, msg)
	var e btcec.ModNScalar
	e.SetBytes(&ch)
	e.Negate()

	var sG, eP, R btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(&s, &sG)
	btcec.ScalarMultNonConst(&e, &key.p, &eP)
	btcec.AddNonConst(&sG, &eP, &R)
	if (R.X.IsZero() && R.Y.IsZero()) || R.Z.IsZero() {
		return false
	}
	R.ToAffine()
	if R.Y.IsOdd() {
		return false
	}
	return r.Equals(&R.X)
}
