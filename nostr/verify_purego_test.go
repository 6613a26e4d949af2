//go:build !libsecp256k1

package nostr

import (
	"crypto/sha256"
	"encoding/binary"
	"math/big"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// testScalars are edge cases for the scalar multiplication, then
// pseudo-random scalars from a hash chain.
func testScalars(t *testing.T) []secp256k1.ModNScalar {
	t.Helper()
	var out []secp256k1.ModNScalar
	add := func(k secp256k1.ModNScalar) { out = append(out, k) }
	var k secp256k1.ModNScalar
	for _, n := range []uint32{0, 1, 2, 3, 15, 16, 17, 31, 32, 33} {
		k.SetInt(n)
		add(k)
		k.Negate()
		add(k)
	}
	var lam secp256k1.ModNScalar
	lam.NegateVal(&endoNegLambda)
	add(lam)
	k.NegateVal(&lam)
	add(k)
	var half [32]byte
	half[0] = 0x7f
	for i := 1; i < 32; i++ {
		half[i] = 0xff
	}
	k.SetBytes(&half)
	add(k)
	// Around 2^128, where the halves of a split scalar lie.
	for _, d := range []int64{-2, -1, 0, 1, 2} {
		var v big.Int
		v.Lsh(big.NewInt(1), 128).Add(&v, big.NewInt(d))
		var b [32]byte
		v.FillBytes(b[:])
		k.SetBytes(&b)
		add(k)
		k.Negate()
		add(k)
	}
	for i := range 32 {
		var one [32]byte
		one[31-i/8] = 1 << (i % 8)
		for j := 0; j < 32; j += 8 {
			one[j] ^= byte(i * 37)
		}
		k.SetBytes(&one)
		add(k)
	}
	seed := sha256.Sum256([]byte("scalar"))
	for range 200 {
		seed = sha256.Sum256(seed[:])
		k.SetBytes(&seed)
		add(k)
	}
	return out
}

// TestSplitScalar checks k = k1 + k2·λ (mod n) with k1 and k2, or their
// negations, under 2^129, so their wNAF forms fit.
func TestSplitScalar(t *testing.T) {
	var lam secp256k1.ModNScalar
	lam.NegateVal(&endoNegLambda)
	for _, k := range testScalars(t) {
		k1, k2 := splitScalar(&k)
		var sum secp256k1.ModNScalar
		sum.Mul2(&k2, &lam).Add(&k1)
		if !sum.Equals(&k) {
			t.Fatalf("k1 + k2·λ != k for k = %x", k.Bytes())
		}
		for _, h := range []secp256k1.ModNScalar{k1, k2} {
			if h.IsOverHalfOrder() {
				h.Negate()
			}
			b := h.Bytes()
			if binary.BigEndian.Uint64(b[0:]) != 0 || binary.BigEndian.Uint64(b[8:]) > 1 {
				t.Fatalf("half scalar %x of k = %x is not under 2^129", b, k.Bytes())
			}
		}
	}
}

// TestWNAF checks, for both window widths, that the digits are odd,
// bounded by the window, spaced at least a window apart, and sum back to
// the scalar (negated halves included).
func TestWNAF(t *testing.T) {
	for _, w := range []int{keyWindow, baseWindow} {
		for _, k := range testScalars(t) {
			k1, k2 := splitScalar(&k)
			for _, h := range []secp256k1.ModNScalar{k1, k2} {
				var digits [wnafDigits]int8
				top := wnaf(&digits, &h, w)
				var sum, term, pow, two secp256k1.ModNScalar
				pow.SetInt(1)
				two.SetInt(2)
				last := -w
				for i := 0; i < wnafDigits; i++ {
					if d := digits[i]; d != 0 {
						if d%2 == 0 || int(d) >= 1<<(w-1) || int(d) <= -(1<<(w-1)) {
							t.Fatalf("w=%d: digit %d at %d is not odd within the window", w, d, i)
						}
						if i-last < w {
							t.Fatalf("w=%d: digits at %d and %d are closer than the window", w, last, i)
						}
						if i > top {
							t.Fatalf("w=%d: digit at %d above the reported top %d", w, i, top)
						}
						last = i
						if d > 0 {
							term.SetInt(uint32(d))
						} else {
							term.SetInt(uint32(-d)).Negate()
						}
						sum.Add(term.Mul(&pow))
					}
					pow.Mul(&two)
				}
				if !sum.Equals(&h) {
					t.Fatalf("w=%d: wNAF digits of %x sum to %x", w, h.Bytes(), sum.Bytes())
				}
			}
		}
	}
}

// decredPoint converts a gnark Jacobian point to a decred one, for
// comparison with the decred package's independent arithmetic.
func decredPoint(t *testing.T, p *curve.G1Jac) secp256k1.JacobianPoint {
	t.Helper()
	var out secp256k1.JacobianPoint
	if p.Z.IsZero() {
		return out // decred's point at infinity is all zeros
	}
	var a curve.G1Affine
	a.FromJacobian(p)
	xb, yb := a.X.Bytes(), a.Y.Bytes()
	out.X.SetBytes(&xb)
	out.Y.SetBytes(&yb)
	out.Z.SetInt(1)
	return out
}

func isInfinity(p *secp256k1.JacobianPoint) bool {
	return (p.X.IsZero() && p.Y.IsZero()) || p.Z.IsZero()
}

// samePoint reports whether a and b are the same point: both the point at
// infinity, or equal in affine terms.
func samePoint(a, b *secp256k1.JacobianPoint) bool {
	if isInfinity(a) || isInfinity(b) {
		return isInfinity(a) == isInfinity(b)
	}
	return a.EquivalentNonConst(b)
}

// testKeys returns lifted keys for a few private keys, with the decred
// point P of each.
func testKeys(t *testing.T, n int) ([]*liftedKey, []secp256k1.JacobianPoint) {
	t.Helper()
	var keys []*liftedKey
	var points []secp256k1.JacobianPoint
	seed := sha256.Sum256([]byte("key"))
	for range n {
		seed = sha256.Sum256(seed[:])
		priv := secp256k1.PrivKeyFromBytes(seed[:])
		var x [32]byte
		priv.PubKey().X().FillBytes(x[:])
		key, ok := liftX(&x)
		if !ok {
			t.Fatalf("liftX rejected %x", x)
		}
		var p secp256k1.JacobianPoint
		p.X.SetBytes(&x)
		if !secp256k1.DecompressY(&p.X, false, &p.Y) {
			t.Fatal("DecompressY failed")
		}
		p.Z.SetInt(1)
		keys = append(keys, key)
		points = append(points, p)
	}
	return keys, points
}

// TestMulLiftedMatchesScalarMult compares the key half of the chain
// (s = 0) with the decred package's ScalarMultNonConst for several keys
// and scalars.
func TestMulLiftedMatchesScalarMult(t *testing.T) {
	scalars := testScalars(t)
	keys, points := testKeys(t, 8)
	base := baseMultiples()
	var zero secp256k1.ModNScalar
	for i, key := range keys {
		for _, k := range scalars {
			var q curve.G1Jac
			mulAdd(&q, &zero, &k, key, base)
			got := decredPoint(t, &q)
			var want secp256k1.JacobianPoint
			secp256k1.ScalarMultNonConst(&k, &points[i], &want)
			if !samePoint(&got, &want) {
				t.Fatalf("key %x, k = %x: k*P disagrees with ScalarMultNonConst", key.x, k.Bytes())
			}
		}
	}
}

// TestMulAddMatchesIndependent checks the joint chain, s*G + e*P, against
// the decred package's ScalarBaseMultNonConst, ScalarMultNonConst and
// AddNonConst, for edge and pseudo-random s and e, including e = -s·d for
// the key's secret d (the sum is then the point at infinity) and e = 1 - s·d
// (the sum is G).
func TestMulAddMatchesIndependent(t *testing.T) {
	testMulAdd(t, func(q *curve.G1Jac, s, e *secp256k1.ModNScalar, key *liftedKey) {
		mulAdd(q, s, e, key, baseMultiples())
	})
}

// testMulAdd checks mul, which sets q to s*G + e*P for the key's P, as
// TestMulAddMatchesIndependent describes.
func testMulAdd(t *testing.T, mul func(q *curve.G1Jac, s, e *secp256k1.ModNScalar, key *liftedKey)) {
	t.Helper()
	scalars := testScalars(t)
	keys, points := testKeys(t, 3)
	seed := sha256.Sum256([]byte("key"))
	for i, key := range keys {
		seed = sha256.Sum256(seed[:])
		// d is the discrete log of the even-y point liftX gives.
		var d secp256k1.ModNScalar
		d.SetBytes(&seed)
		if secp256k1.PrivKeyFromBytes(seed[:]).PubKey().Y().Bit(0) == 1 {
			d.Negate()
		}
		check := func(s, e *secp256k1.ModNScalar) *curve.G1Jac {
			t.Helper()
			var q curve.G1Jac
			mul(&q, s, e, key)
			got := decredPoint(t, &q)
			var sG, eP, want secp256k1.JacobianPoint
			secp256k1.ScalarBaseMultNonConst(s, &sG)
			secp256k1.ScalarMultNonConst(e, &points[i], &eP)
			secp256k1.AddNonConst(&sG, &eP, &want)
			if !samePoint(&got, &want) {
				t.Fatalf("key %x, s = %x, e = %x: s*G + e*P disagrees with the decred package", key.x, s.Bytes(), e.Bytes())
			}
			return &q
		}
		for j, s := range scalars {
			e := scalars[(j*7+i+1)%len(scalars)]
			check(&s, &e)
			check(&s, &s)
			// e = -s/d: s*G + e*P = s*G - s*G, the point at infinity.
			var dInv, cancel secp256k1.ModNScalar
			dInv.InverseValNonConst(&d)
			cancel.Mul2(&s, &dInv).Negate()
			if q := check(&s, &cancel); !q.Z.IsZero() {
				t.Fatalf("key %x, s = %x: s*G - s*G is not the point at infinity", key.x, s.Bytes())
			}
			// e = (1 - s)/d: the sum is G.
			var one, toG secp256k1.ModNScalar
			one.SetInt(1)
			toG.NegateVal(&s).Add(&one)
			toG.Mul(&dInv)
			_, g := curve.Generators()
			var a curve.G1Affine
			if a.FromJacobian(check(&s, &toG)); !a.Equal(&g) {
				t.Fatalf("key %x, s = %x: s*G + (1-s)*G is not G", key.x, s.Bytes())
			}
		}
	}
}

// TestInvert checks the safegcd inversion against gnark-crypto's
// fp.Element.Inverse (math/big's) and Fermat's x^(p-2): small values,
// values just under p, powers of two and their predecessors, words with
// one 62-bit limb all ones and the rest zero, and random values.
func TestInvert(t *testing.T) {
	var cases []fp.Element
	var x fp.Element
	for i := range 40 {
		x.SetUint64(uint64(i + 1))
		cases = append(cases, x)
	}
	pm := fp.Modulus()
	for _, d := range []int64{1, 2, 3, 977, 1 << 32} {
		var v big.Int
		v.Sub(pm, big.NewInt(d))
		x.SetBigInt(&v)
		cases = append(cases, x)
	}
	for k := range 256 {
		var v big.Int
		v.Lsh(big.NewInt(1), uint(k))
		x.SetBigInt(&v) // reduced mod p past p
		cases = append(cases, x)
		v.Sub(&v, big.NewInt(1))
		x.SetBigInt(&v)
		cases = append(cases, x)
	}
	for limb := range 5 {
		var s signed62
		s[limb] = mask62
		if limb == 4 {
			s[limb] = 0xff // the top limb holds 256 - 4·62 bits
		}
		cases = append(cases, fp.Element(fromSigned62(&s))) // all below p
	}
	for range 20000 {
		x.MustSetRandom()
		cases = append(cases, x)
	}
	for _, x := range cases {
		var got, want, fermat fp.Element
		invert(&got, &x)
		want.Inverse(&x)
		fermat.ExpBySqrtPm3o4(x)
		fermat.Square(&fermat).Square(&fermat).Mul(&fermat, &x)
		if !got.Equal(&want) || !got.Equal(&fermat) {
			t.Fatalf("invert(%s) = %s, want %s", x.String(), got.String(), want.String())
		}
	}
	x.SetZero()
	var got fp.Element
	invert(&got, &x)
	if !got.IsZero() {
		t.Fatalf("invert(0) = %s, want 0", got.String())
	}
}

// FuzzInvert checks x·invert(x) = 1 for any x (0 for 0).
func FuzzInvert(f *testing.F) {
	f.Add(make([]byte, 32))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var x fp.Element
		x.SetBytes(b) // reduced mod p
		var inv, prod fp.Element
		invert(&inv, &x)
		prod.Mul(&x, &inv)
		if x.IsZero() != inv.IsZero() || !x.IsZero() && !prod.IsOne() {
			t.Fatalf("invert(%s) = %s: product %s", x.String(), inv.String(), prod.String())
		}
	})
}

// BenchmarkInvert measures one field inversion.
func BenchmarkInvert(b *testing.B) {
	var x fp.Element
	x.MustSetRandom()
	for b.Loop() {
		invert(&x, &x)
	}
}
