//go:build !libsecp256k1

package nostr

import (
	"math/bits"

	curve "github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
)

// The chain's doublings and additions use gnark-crypto's multiplication
// and squaring, but additions and subtractions in the field of their own:
// fp.Element's Add, Double and Sub branch on the carry or borrow, which
// for the varying values of a verification is a coin toss the branch
// predictor loses about half the time. These select instead. They rely on
// p = 2^256 - pC and take and return canonical values (below p).
const pC = 1<<32 + 977

// fieldAdd sets z = x + y mod p.
func fieldAdd(z, x, y *fp.Element) {
	var c, c2 uint64
	var s, t [4]uint64
	s[0], c = bits.Add64(x[0], y[0], 0)
	s[1], c = bits.Add64(x[1], y[1], c)
	s[2], c = bits.Add64(x[2], y[2], c)
	s[3], c = bits.Add64(x[3], y[3], c)
	// With a carry, x + y - p = s + pC fits in 256 bits; without one,
	// s >= p exactly when s + pC carries, and then s - p is s + pC mod 2^256.
	t[0], c2 = bits.Add64(s[0], pC, 0)
	t[1], c2 = bits.Add64(s[1], 0, c2)
	t[2], c2 = bits.Add64(s[2], 0, c2)
	t[3], c2 = bits.Add64(s[3], 0, c2)
	m := -(c | c2)
	z[0] = s[0] ^ m&(s[0]^t[0])
	z[1] = s[1] ^ m&(s[1]^t[1])
	z[2] = s[2] ^ m&(s[2]^t[2])
	z[3] = s[3] ^ m&(s[3]^t[3])
}

// fieldSub sets z = x - y mod p.
func fieldSub(z, x, y *fp.Element) {
	var b uint64
	var d [4]uint64
	d[0], b = bits.Sub64(x[0], y[0], 0)
	d[1], b = bits.Sub64(x[1], y[1], b)
	d[2], b = bits.Sub64(x[2], y[2], b)
	d[3], b = bits.Sub64(x[3], y[3], b)
	// On a borrow d is x - y + 2^256, and x - y + p = d - pC, which is
	// non-negative, so the borrow chain below ends within the 256 bits.
	d[0], b = bits.Sub64(d[0], pC&-b, 0)
	d[1], b = bits.Sub64(d[1], 0, b)
	d[2], b = bits.Sub64(d[2], 0, b)
	z[3], _ = bits.Sub64(d[3], 0, b)
	z[0], z[1], z[2] = d[0], d[1], d[2]
}

// jacDouble doubles p in Jacobian coordinates (dbl-2009-l, 2M + 5S; the
// point at infinity, Z = 0, stays it).
func jacDouble(p *curve.G1Jac) {
	var A, B, C, D, E, F, t fp.Element
	A.Square(&p.X)
	B.Square(&p.Y)
	C.Square(&B)
	fieldAdd(&D, &p.X, &B)
	D.Square(&D)
	fieldSub(&D, &D, &A)
	fieldSub(&D, &D, &C)
	fieldAdd(&D, &D, &D)
	fieldAdd(&E, &A, &A)
	fieldAdd(&E, &E, &A) // 3X²
	F.Square(&E)
	fieldAdd(&t, &D, &D)
	p.Z.Mul(&p.Y, &p.Z)
	fieldAdd(&p.Z, &p.Z, &p.Z)
	fieldSub(&p.X, &F, &t)
	fieldSub(&p.Y, &D, &p.X)
	p.Y.Mul(&p.Y, &E)
	fieldAdd(&t, &C, &C)
	fieldAdd(&t, &t, &t)
	fieldAdd(&t, &t, &t) // 8C
	fieldSub(&p.Y, &p.Y, &t)
}

// jacAddAffine adds the affine point a (not the point at infinity) to p
// in Jacobian coordinates (madd-2007-bl, 7M + 4S), doubling when p = a and
// giving the point at infinity (Z = 0) when p = -a.
func jacAddAffine(p *curve.G1Jac, a *curve.G1Affine) {
	if p.Z.IsZero() {
		p.X, p.Y = a.X, a.Y
		p.Z.SetOne()
		return
	}
	var Z1Z1, U2, S2, H, HH, I, J, r, V fp.Element
	Z1Z1.Square(&p.Z)
	U2.Mul(&a.X, &Z1Z1)
	S2.Mul(&a.Y, &p.Z)
	S2.Mul(&S2, &Z1Z1)
	if U2.Equal(&p.X) && S2.Equal(&p.Y) {
		jacDouble(p)
		return
	}
	fieldSub(&H, &U2, &p.X)
	HH.Square(&H)
	fieldAdd(&I, &HH, &HH)
	fieldAdd(&I, &I, &I)
	J.Mul(&H, &I)
	fieldSub(&r, &S2, &p.Y)
	fieldAdd(&r, &r, &r)
	V.Mul(&p.X, &I)
	p.X.Square(&r)
	fieldSub(&p.X, &p.X, &J)
	fieldSub(&p.X, &p.X, &V)
	fieldSub(&p.X, &p.X, &V)
	J.Mul(&J, &p.Y)
	fieldAdd(&J, &J, &J)
	fieldSub(&p.Y, &V, &p.X)
	p.Y.Mul(&p.Y, &r)
	fieldSub(&p.Y, &p.Y, &J)
	fieldAdd(&p.Z, &p.Z, &H)
	p.Z.Square(&p.Z)
	fieldSub(&p.Z, &p.Z, &Z1Z1)
	fieldSub(&p.Z, &p.Z, &HH)
}
