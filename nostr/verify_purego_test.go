//go:build !libsecp256k1

package nostr

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"

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

// TestWNAF checks that the digits are odd, bounded by the window, spaced
// at least a window apart, and sum back to the scalar.
func TestWNAF(t *testing.T) {
	for _, k := range testScalars(t) {
		k1, _ := splitScalar(&k)
		if k1.IsOverHalfOrder() {
			k1.Negate()
		}
		var digits [wnafDigits]int8
		top := wnaf(&digits, &k1)
		var sum, term, pow secp256k1.ModNScalar
		pow.SetInt(1)
		last := -wnafWindow
		for i := 0; i < wnafDigits; i++ {
			if d := digits[i]; d != 0 {
				if d%2 == 0 || d >= 1<<(wnafWindow-1) || d <= -(1<<(wnafWindow-1)) {
					t.Fatalf("digit %d at %d is not odd within the window", d, i)
				}
				if i-last < wnafWindow {
					t.Fatalf("digits at %d and %d are closer than the window", last, i)
				}
				if i > top {
					t.Fatalf("digit at %d above the reported top %d", i, top)
				}
				last = i
				if d > 0 {
					term.SetInt(uint32(d))
				} else {
					term.SetInt(uint32(-d)).Negate()
				}
				sum.Add(term.Mul(&pow))
			}
			var two secp256k1.ModNScalar
			two.SetInt(2)
			pow.Mul(&two)
		}
		if !sum.Equals(&k1) {
			t.Fatalf("wNAF digits of %x sum to %x", k1.Bytes(), sum.Bytes())
		}
	}
}

// TestMulLiftedMatchesScalarMult compares the key-table multiplication with
// the decred package's ScalarMultNonConst for several keys and scalars.
func TestMulLiftedMatchesScalarMult(t *testing.T) {
	scalars := testScalars(t)
	seed := sha256.Sum256([]byte("key"))
	for range 8 {
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
		for _, k := range scalars {
			var got, want secp256k1.JacobianPoint
			mulLifted(&k, key, &got)
			secp256k1.ScalarMultNonConst(&k, &p, &want)
			if !got.EquivalentNonConst(&want) {
				t.Fatalf("key %x, k = %x: mulLifted disagrees with ScalarMultNonConst", x, k.Bytes())
			}
		}
	}
}
