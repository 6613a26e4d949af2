//go:build !libsecp256k1

package nostr

import (
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
)

// fieldEdges are values around 0, 2^32, p/2 and p, where the carry and
// borrow of fieldAdd and fieldSub turn.
func fieldEdges() []fp.Element {
	var out []fp.Element
	var one, e fp.Element
	one.SetOne()
	for _, v := range []int64{0, 1, 2, 977, 1 << 32, 1<<32 + 977, 1<<32 + 978} {
		e.SetInt64(v)
		out = append(out, e)
		e.SetInt64(-v) // p - v
		out = append(out, e)
	}
	var half fp.Element
	half.SetInt64(-1)
	half.Halve() // (p-1)/2
	for _, d := range []int64{-1, 0, 1, 2} {
		var dd fp.Element
		dd.SetInt64(d)
		e.Add(&half, &dd)
		out = append(out, e)
	}
	// 2^255 and 2^256 - 2^33 - 1954 (p - pC), whose doubles overflow 256 bits.
	var b [32]byte
	b[0] = 0x80
	e.SetBytes(b[:])
	out = append(out, e)
	e.SetInt64(-(1<<32 + 977))
	out = append(out, e)
	for range 300 {
		e.MustSetRandom()
		out = append(out, e)
	}
	return out
}

// TestFieldAddSub checks the branch-free addition and subtraction against
// fp.Element's for every pair of edge and random values.
func TestFieldAddSub(t *testing.T) {
	vals := fieldEdges()
	for i := range vals {
		for j := range vals {
			x, y := &vals[i], &vals[j]
			var got, want fp.Element
			fieldAdd(&got, x, y)
			want.Add(x, y)
			if got != want { // raw limbs: canonical form included
				t.Fatalf("fieldAdd(%s, %s) = %v, want %v", x.String(), y.String(), got, want)
			}
			fieldSub(&got, x, y)
			want.Sub(x, y)
			if got != want {
				t.Fatalf("fieldSub(%s, %s) = %v, want %v", x.String(), y.String(), got, want)
			}
		}
	}
}

// TestJacobianFormulas checks jacDouble and jacAddAffine against
// gnark-crypto's DoubleAssign and AddMixed on multiples of G, including
// the doubling (p = a) and cancelling (p = -a) cases and the point at
// infinity.
func TestJacobianFormulas(t *testing.T) {
	gJac, g := curve.Generators()
	var pts []curve.G1Jac
	p := gJac
	for i := range 40 {
		pts = append(pts, p)
		// Scale Z away from 1 so the formulas see general Jacobian input.
		var q curve.G1Jac
		q.Double(&p)
		if i%2 == 0 {
			p.AddAssign(&q)
		} else {
			p.AddMixed(&g)
			p.DoubleAssign()
		}
	}
	var affs []curve.G1Affine
	for i := range pts {
		var a curve.G1Affine
		a.FromJacobian(&pts[i])
		affs = append(affs, a)
	}
	for i := range pts {
		got, want := pts[i], pts[i]
		jacDouble(&got)
		want.DoubleAssign()
		if !got.Equal(&want) {
			t.Fatalf("jacDouble of point %d disagrees with DoubleAssign", i)
		}
		for j := range affs {
			got, want := pts[i], pts[i]
			jacAddAffine(&got, &affs[j])
			want.AddMixed(&affs[j])
			if !got.Equal(&want) {
				t.Fatalf("jacAddAffine of points %d and %d disagrees with AddMixed", i, j)
			}
			// p + (-p) and p + p.
			var neg curve.G1Affine
			neg.Neg(&affs[i])
			got = pts[i]
			jacAddAffine(&got, &neg)
			if !got.Z.IsZero() {
				t.Fatalf("point %d plus its negation is not the point at infinity", i)
			}
			got, want = pts[i], pts[i]
			jacAddAffine(&got, &affs[i])
			want.DoubleAssign()
			if !got.Equal(&want) {
				t.Fatalf("point %d plus itself is not its double", i)
			}
		}
	}
	var inf curve.G1Jac
	jacDouble(&inf)
	if !inf.Z.IsZero() {
		t.Fatal("the double of the point at infinity is finite")
	}
	jacAddAffine(&inf, &g)
	var want curve.G1Jac
	want.FromAffine(&g)
	if !inf.Equal(&want) {
		t.Fatal("the point at infinity plus G is not G")
	}
}
