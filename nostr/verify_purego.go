//go:build !libsecp256k1

package nostr

import (
	"encoding/binary"
	"encoding/hex"
	"math/bits"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// VerifyBackend names the signature verification backend of this build.
const VerifyBackend = "purego"

// wnafWindow is the window width of the signed-digit (wNAF) form the public
// key's half of R = s*G - e*P is computed with: digits are odd, in
// (-2^(w-1), 2^(w-1)), so the key's table holds 2^(w-2) odd multiples.
const (
	wnafWindow = 5
	wnafTable  = 1 << (wnafWindow - 2)
	// wnafDigits bounds the digit positions of a half-length scalar from
	// splitScalar (under 2^129), with room for the final carry.
	wnafDigits = 132
)

// liftedKey is a public key after lift_x, with the odd multiples P, 3P, …,
// 15P in affine form (Z = 1), computed once per key so each verification
// spends its point additions on the cheaper mixed form.
type liftedKey struct {
	x     [32]byte
	table [wnafTable]secp256k1.JacobianPoint
}

func backendSelfTest() error { return nil }

// liftX performs BIP-340 lift_x: the curve point with x coordinate x and an
// even y, failing if x is not a valid coordinate (x >= p included). It then
// fills the key's table of odd multiples.
func liftX(x *[32]byte) (*liftedKey, bool) {
	var px secp256k1.FieldVal
	if overflow := px.SetBytes(x); overflow != 0 {
		return nil, false
	}
	var py secp256k1.FieldVal
	if !secp256k1.DecompressY(&px, false, &py) {
		return nil, false
	}
	k := &liftedKey{x: *x}
	p := &k.table[0]
	p.X.Set(&px)
	p.Y.Set(&py)
	p.Z.SetInt(1)

	// Jacobian odd multiples: t[i] = t[i-1] + 2P.
	var twoP secp256k1.JacobianPoint
	secp256k1.DoubleNonConst(p, &twoP)
	for i := 1; i < wnafTable; i++ {
		secp256k1.AddNonConst(&k.table[i-1], &twoP, &k.table[i])
	}
	// To affine with one inversion (Montgomery's trick): prefix[i] is the
	// product of the Z values of t[1..i]. No multiple of a point of prime
	// order n is the point at infinity for a multiplier below n, so every
	// Z is non-zero.
	var prefix [wnafTable]secp256k1.FieldVal
	prefix[0].SetInt(1)
	for i := 1; i < wnafTable; i++ {
		prefix[i].Mul2(&prefix[i-1], &k.table[i].Z)
	}
	var inv secp256k1.FieldVal
	inv.Set(&prefix[wnafTable-1]).Inverse()
	for i := wnafTable - 1; i >= 1; i-- {
		var zInv, zInv2, zInv3 secp256k1.FieldVal
		zInv.Mul2(&inv, &prefix[i-1]) // 1/Z_i
		inv.Mul(&k.table[i].Z)        // 1/(Z_1…Z_{i-1})
		zInv2.SquareVal(&zInv)
		zInv3.Mul2(&zInv2, &zInv)
		t := &k.table[i]
		t.X.Mul(&zInv2).Normalize()
		t.Y.Mul(&zInv3).Normalize()
		t.Z.SetInt(1)
	}
	return k, true
}

// verifySig checks a BIP-340 signature of the 32-byte msg by key:
// with r = sig[0:32] < p, s = sig[32:64] < n and e = challenge(r, P, m),
// R = s*G - e*P must be a finite point with even y and x(R) = r.
//
// s*G uses the precomputed tables of the decred secp256k1 package; -e*P is
// split by the curve's endomorphism into k1*P + k2*λP with k1, k2 of about
// 128 bits, each walked in width-5 wNAF against the key's cached odd
// multiples (λP is (β·x, y), one multiplication per entry), so it costs
// about 128 doublings and 45 mixed additions. Nothing is allocated.
func (v *Verifier) verifySig(key *liftedKey, msg *[32]byte, sig *[64]byte) bool {
	var r secp256k1.FieldVal
	if overflow := r.SetByteSlice(sig[:32]); overflow {
		return false
	}
	var s secp256k1.ModNScalar
	if overflow := s.SetByteSlice(sig[32:]); overflow {
		return false
	}
	ch := v.challenge(sig[:32], &key.x, msg)
	var e secp256k1.ModNScalar
	e.SetBytes(&ch)
	e.Negate()

	var eP, sG, R secp256k1.JacobianPoint
	mulLifted(&e, key, &eP)
	secp256k1.ScalarBaseMultNonConst(&s, &sG)
	secp256k1.AddNonConst(&sG, &eP, &R)
	if (R.X.IsZero() && R.Y.IsZero()) || R.Z.IsZero() {
		return false
	}
	R.ToAffine()
	if R.Y.IsOdd() {
		return false
	}
	return r.Equals(&R.X)
}

// mulLifted sets result to k*P for the key's point P (normalized).
func mulLifted(k *secp256k1.ModNScalar, key *liftedKey, result *secp256k1.JacobianPoint) {
	k1, k2 := splitScalar(k)
	neg1, neg2 := k1.IsOverHalfOrder(), k2.IsOverHalfOrder()
	if neg1 {
		k1.Negate()
	}
	if neg2 {
		k2.Negate()
	}
	var n1, n2 [wnafDigits]int8
	top1 := wnaf(&n1, &k1)
	top2 := wnaf(&n2, &k2)
	top := max(top1, top2)

	// λP's table: (β·x, y) of each odd multiple.
	var lam [wnafTable]secp256k1.JacobianPoint
	for i := range lam {
		lam[i].X.Mul2(&key.table[i].X, &endoBeta).Normalize()
		lam[i].Y.Set(&key.table[i].Y)
		lam[i].Z.SetInt(1)
	}

	var q, t secp256k1.JacobianPoint // q starts as the point at infinity
	for i := top; i >= 0; i-- {
		secp256k1.DoubleNonConst(&q, &q)
		if d := n1[i]; d != 0 {
			addDigit(&q, &key.table, d, neg1, &t)
		}
		if d := n2[i]; d != 0 {
			addDigit(&q, &lam, d, neg2, &t)
		}
	}
	result.Set(&q)
}

// addDigit adds d*P (d odd, from a wNAF form) to q, negated when neg is
// set, where table holds P, 3P, … in affine form; t is scratch space.
func addDigit(q *secp256k1.JacobianPoint, table *[wnafTable]secp256k1.JacobianPoint, d int8, neg bool, t *secp256k1.JacobianPoint) {
	if d < 0 {
		d, neg = -d, !neg
	}
	p := &table[d>>1]
	if neg {
		t.X.Set(&p.X)
		t.Y.NegateVal(&p.Y, 1).Normalize()
		t.Z.SetInt(1)
		p = t
	}
	secp256k1.AddNonConst(q, p, q)
}

// wnaf writes the width-wnafWindow non-adjacent form of k (below 2^130) into
// out, least significant digit first, and returns the index of its highest
// non-zero digit (-1 for zero).
func wnaf(out *[wnafDigits]int8, k *secp256k1.ModNScalar) int {
	b := k.Bytes()
	var limbs [5]uint64 // little-endian, with a zero limb to read past the top
	for i := range 4 {
		limbs[i] = binary.BigEndian.Uint64(b[24-8*i:])
	}
	bitsAt := func(pos, n int) uint64 {
		w, off := pos/64, uint(pos%64)
		v := limbs[w] >> off
		if off+uint(n) > 64 {
			v |= limbs[w+1] << (64 - off)
		}
		return v & (1<<n - 1)
	}
	top := -1
	carry := uint64(0)
	for pos := 0; pos < wnafDigits; {
		if bitsAt(pos, 1) == carry {
			pos++
			continue
		}
		n := min(wnafWindow, wnafDigits-pos)
		word := int64(bitsAt(pos, n) + carry)
		carry = uint64(word>>(wnafWindow-1)) & 1
		word -= int64(carry) << wnafWindow
		out[pos] = int8(word)
		top = pos
		pos += n
	}
	return top
}

// The endomorphism constants: λ·(x, y) = (β·x, y) for every curve point,
// and the lattice basis splitScalar rounds against (the same values the
// decred package uses internally).
var (
	endoBeta      = fieldHex("7ae96a2b657c07106e64479eac3434e99cf0497512f58995c1396c28719501ee")
	endoNegLambda = scalarHex("5363ad4cc05c30e0a5261c028812645a122e22ea20816678df02967c1b23bd72", true)
	endoNegB1     = scalarHex("e4437ed6010e88286f547fa90abfe4c3", false)
	endoNegB2     = scalarHex("3086d221a7d46bcde86c90e49284eb15", true)
	endoZ1        = limbsHex("3086d221a7d46bcde86c90e49284eb153daa8a1471e8ca7f")
	endoZ2        = limbsHex("e4437ed6010e88286f547fa90abfe4c4221208ac9df506c6")
)

// splitScalar returns k1, k2 with k = k1 + k2·λ (mod n), each (or its
// negation) under about 2^128.
func splitScalar(k *secp256k1.ModNScalar) (k1, k2 secp256k1.ModNScalar) {
	kb := k.Bytes()
	var kl [4]uint64
	for i := range 4 {
		kl[i] = binary.BigEndian.Uint64(kb[24-8*i:])
	}
	c1 := mulShift320Round(&kl, &endoZ1)
	c2 := mulShift320Round(&kl, &endoZ2)
	c1.Mul(&endoNegB1)
	c2.Mul(&endoNegB2)
	k2.Add2(&c1, &c2)
	k1.Mul2(&k2, &endoNegLambda).Add(k)
	return k1, k2
}

// mulShift320Round returns round(a·b / 2^320) as a scalar, for the 256-bit
// a and the 192-bit rounding constants b.
func mulShift320Round(a, b *[4]uint64) secp256k1.ModNScalar {
	var prod [8]uint64
	for i := range 4 {
		var carry uint64
		for j := range 4 {
			hi, lo := bits.Mul64(a[i], b[j])
			var c uint64
			lo, c = bits.Add64(lo, prod[i+j], 0)
			hi += c
			lo, c = bits.Add64(lo, carry, 0)
			hi += c
			prod[i+j] = lo
			carry = hi
		}
		prod[i+4] = carry
	}
	round := prod[4] >> 63
	r0, c := bits.Add64(prod[5], round, 0)
	r1, c := bits.Add64(prod[6], 0, c)
	r2, _ := bits.Add64(prod[7], 0, c)
	var out [32]byte
	binary.BigEndian.PutUint64(out[8:], r2)
	binary.BigEndian.PutUint64(out[16:], r1)
	binary.BigEndian.PutUint64(out[24:], r0)
	var s secp256k1.ModNScalar
	s.SetBytes(&out)
	return s
}

func fieldHex(s string) secp256k1.FieldVal {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	var f secp256k1.FieldVal
	f.SetByteSlice(b)
	return f
}

func scalarHex(s string, negate bool) secp256k1.ModNScalar {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	var k secp256k1.ModNScalar
	k.SetByteSlice(b)
	if negate {
		k.Negate()
	}
	return k
}

func limbsHex(s string) [4]uint64 {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	var full [32]byte
	copy(full[32-len(b):], b)
	var l [4]uint64
	for i := range 4 {
		l[i] = binary.BigEndian.Uint64(full[24-8*i:])
	}
	return l
}
