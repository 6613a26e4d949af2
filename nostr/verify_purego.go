//go:build !libsecp256k1

package nostr

import (
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"sync"
	"sync/atomic"

	curve "github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// VerifyBackend names the signature verification backend of this build.
const VerifyBackend = "purego"

// R = s*G - e*P is computed in one chain of doublings from the four
// half-length scalars the endomorphism splits s and -e into, each in
// width-w non-adjacent form (wNAF): digits are odd, in (-2^(w-1), 2^(w-1)),
// and a table of 2^(w-2) odd multiples serves each. The key's tables are
// built once per key, so they use a narrow window; G's are built once per
// process, so they use a wide one and need fewer additions.
const (
	keyWindow  = 5
	keyTable   = 1 << (keyWindow - 2)
	baseWindow = 8
	baseTable  = 1 << (baseWindow - 2)
	// wnafDigits bounds the digit positions of a half-length scalar from
	// splitScalar (under 2^129), with room for the final carry.
	wnafDigits = 132
)

// liftedKey is a public key after lift_x, with the odd multiples P, 3P, …,
// 15P in affine form, computed once per key so each verification spends
// its point additions on the cheaper mixed form, and, once the key has
// signed combAfter verified events, its comb table.
type liftedKey struct {
	x        [32]byte
	table    [keyTable]curve.G1Affine
	comb     atomic.Pointer[combTable] // nil until built
	verified atomic.Uint32             // verified signatures, counted until comb is built
}

// baseTables holds the odd multiples G, 3G, … of the generator and of λG
// in affine form. It is built once and never written after.
type baseTables struct {
	g, lamG [baseTable]curve.G1Affine
}

// baseMultiples returns the process's generator tables, built on first use.
var baseMultiples = sync.OnceValue(func() *baseTables {
	_, g := curve.Generators()
	t := &baseTables{}
	oddMultiples(&g, t.g[:])
	for i := range t.lamG {
		t.lamG[i].X.Mul(&t.g[i].X, &endoBeta)
		t.lamG[i].Y = t.g[i].Y
	}
	return t
})

func backendSelfTest() error { return nil }

// oddMultiples fills out with p, 3p, 5p, … in affine form, using one field
// inversion (Montgomery's trick). No multiple of a point of prime order n
// is the point at infinity for a multiplier below n, so every Z is
// non-zero. len(out) must be at most baseTable (the scratch arrays).
func oddMultiples(p *curve.G1Affine, out []curve.G1Affine) {
	var jac [baseTable]curve.G1Jac
	var scratch [baseTable]fp.Element
	n := len(out)
	var twoP curve.G1Jac
	twoP.DoubleMixed(p)
	jac[0].FromAffine(p)
	for i := 1; i < n; i++ {
		jac[i] = jac[i-1]
		jac[i].AddAssign(&twoP)
	}
	toAffine(jac[:n], out, scratch[:n])
}

// toAffine sets out[i] to jac[i] in affine form with one field inversion
// for all of them (Montgomery's trick); scratch must be as long as jac.
// Every Z must be non-zero.
func toAffine(jac []curve.G1Jac, out []curve.G1Affine, scratch []fp.Element) {
	n := len(jac)
	// scratch[i] is the product of the Z values of jac[0..i].
	scratch[0] = jac[0].Z
	for i := 1; i < n; i++ {
		scratch[i].Mul(&scratch[i-1], &jac[i].Z)
	}
	var inv fp.Element
	invert(&inv, &scratch[n-1])
	for i := n - 1; i >= 0; i-- {
		var zInv, zInv2 fp.Element
		if i > 0 {
			zInv.Mul(&inv, &scratch[i-1]) // 1/Z_i
			inv.Mul(&inv, &jac[i].Z)      // 1/(Z_0…Z_{i-1})
		} else {
			zInv = inv
		}
		zInv2.Square(&zInv)
		out[i].X.Mul(&jac[i].X, &zInv2)
		out[i].Y.Mul(&jac[i].Y, &zInv2).Mul(&out[i].Y, &zInv)
	}
}

// liftX performs BIP-340 lift_x: the curve point with x coordinate x and an
// even y, failing if x is not a valid coordinate (x >= p included). It then
// fills the key's table of odd multiples.
func liftX(x *[32]byte) (*liftedKey, bool) {
	px, err := fp.BigEndian.Element(x)
	if err != nil {
		return nil, false
	}
	seven := fp.NewElement(7)
	var y2, py fp.Element
	y2.Square(&px).Mul(&y2, &px).Add(&y2, &seven)
	if py.Sqrt(&y2) == nil {
		return nil, false
	}
	if isOdd(&py) {
		py.Neg(&py)
	}
	k := &liftedKey{x: *x}
	oddMultiples(&curve.G1Affine{X: px, Y: py}, k.table[:])
	return k, true
}

// isOdd reports whether the canonical value of a is odd.
func isOdd(a *fp.Element) bool {
	return a.Bits()[0]&1 == 1
}

// verifySig checks a BIP-340 signature of the 32-byte msg by key:
// with r = sig[0:32] < p, s = sig[32:64] < n and e = challenge(r, P, m),
// R = s*G - e*P must be a finite point with even y and x(R) = r.
//
// s and -e are each split by the curve's endomorphism into two scalars of
// about 128 bits (k1 + k2·λ), and all four are walked in wNAF in one chain
// of about 128 doublings: -e's halves against the key's odd multiples of P
// and λP (λP is (β·x, y), one multiplication per entry), s's against the
// wider constant tables of G and λG. The x coordinate is compared in
// Jacobian form (r·Z² = X) before the one inversion the y parity needs.
// A key with a comb table is walked column by column instead
// (mulAddComb). Nothing is allocated, except a key's comb table when this
// verification is its combAfter-th.
func (v *Verifier) verifySig(key *liftedKey, msg *[32]byte, sig *[64]byte) bool {
	r, err := fp.BigEndian.Element((*[32]byte)(sig[:32]))
	if err != nil {
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

	var R curve.G1Jac
	if comb := key.comb.Load(); comb == nil || !mulAddComb(&R, &s, &e, comb, baseComb()) {
		mulAdd(&R, &s, &e, key, baseMultiples())
	}
	if R.Z.IsZero() {
		return false
	}
	var zz, rx fp.Element
	zz.Square(&R.Z)
	rx.Mul(&r, &zz)
	if !rx.Equal(&R.X) {
		return false
	}
	var zInv, y fp.Element
	invert(&zInv, &R.Z)
	y.Square(&zInv).Mul(&y, &zInv).Mul(&y, &R.Y)
	if isOdd(&y) {
		return false
	}
	v.verified(key)
	return true
}

// mulAdd sets q to s*G + e*P for the key's point P.
func mulAdd(q *curve.G1Jac, s, e *secp256k1.ModNScalar, key *liftedKey, base *baseTables) {
	e1, e2 := splitScalar(e)
	s1, s2 := splitScalar(s)
	var ne1, ne2, ns1, ns2 [wnafDigits]int8
	top := max(
		wnaf(&ne1, &e1, keyWindow),
		wnaf(&ne2, &e2, keyWindow),
		wnaf(&ns1, &s1, baseWindow),
		wnaf(&ns2, &s2, baseWindow),
	)

	// λP's table: (β·x, y) of each odd multiple.
	var lam [keyTable]curve.G1Affine
	for i := range lam {
		lam[i].X.Mul(&key.table[i].X, &endoBeta)
		lam[i].Y = key.table[i].Y
	}

	*q = curve.G1Jac{} // the point at infinity (Z = 0)
	for i := top; i >= 0; i-- {
		jacDouble(q)
		if d := ne1[i]; d != 0 {
			addDigit(q, key.table[:], d)
		}
		if d := ne2[i]; d != 0 {
			addDigit(q, lam[:], d)
		}
		if d := ns1[i]; d != 0 {
			addDigit(q, base.g[:], d)
		}
		if d := ns2[i]; d != 0 {
			addDigit(q, base.lamG[:], d)
		}
	}
}

// addDigit adds d*P (d odd, from a wNAF form) to q, where table holds P,
// 3P, … in affine form.
func addDigit(q *curve.G1Jac, table []curve.G1Affine, d int8) {
	if d > 0 {
		jacAddAffine(q, &table[d>>1])
		return
	}
	p := &table[(-d)>>1]
	var t curve.G1Affine
	t.X = p.X
	t.Y.Neg(&p.Y)
	jacAddAffine(q, &t)
}

// wnaf writes the width-w non-adjacent form of k into out, least
// significant digit first, and returns the index of its highest non-zero
// digit (-1 for zero). k is a half-length scalar from splitScalar: it or
// its negation is below 2^129, and in the latter case the digits are those
// of -k, negated. w is at most 8.
func wnaf(out *[wnafDigits]int8, k *secp256k1.ModNScalar, w int) int {
	abs, neg := absLimbs(k)
	var limbs [5]uint64 // with a zero limb to read past the top
	copy(limbs[:], abs[:])
	bitsAt := func(pos, n int) uint64 {
		i, off := pos/64, uint(pos%64)
		v := limbs[i] >> off
		if off+uint(n) > 64 {
			v |= limbs[i+1] << (64 - off)
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
		n := min(w, wnafDigits-pos)
		word := int64(bitsAt(pos, n) + carry)
		carry = uint64(word>>(w-1)) & 1
		word -= int64(carry) << w
		if neg {
			word = -word
		}
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
	kl := limbsOf(&kb)
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

func fieldHex(s string) fp.Element {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != fp.Bytes {
		panic("nostr: bad field constant " + s)
	}
	f, err := fp.BigEndian.Element((*[fp.Bytes]byte)(b))
	if err != nil {
		panic(err)
	}
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
	return limbsOf(&full)
}

// limbsOf returns the 256-bit big-endian number b as four little-endian
// 64-bit words.
func limbsOf(b *[32]byte) [4]uint64 {
	var l [4]uint64
	for i := range 4 {
		l[i] = binary.BigEndian.Uint64(b[24-8*i:])
	}
	return l
}

// absLimbs returns the smaller of k and -k (mod n) as four little-endian
// 64-bit words, and whether that is -k.
func absLimbs(k *secp256k1.ModNScalar) (limbs [4]uint64, neg bool) {
	neg = k.IsOverHalfOrder()
	var kk secp256k1.ModNScalar
	kk.Set(k)
	if neg {
		kk.Negate()
	}
	b := kk.Bytes()
	return limbsOf(&b), neg
}
