//go:build !libsecp256k1

package nostr

import (
	"crypto/rand"

	curve "github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// A batch's R points get a table of odd multiples each, built per batch,
// so they use a narrow window; their multipliers are 128-bit, so they need
// no endomorphism split.
const (
	rWindow = 4
	rTable  = 1 << (rWindow - 2)
)

// batchVerification is true: VerifyConcurrent batches concurrent calls.
const batchVerification = true

// batchTerm is one signature's share of a batch's multi-scalar
// multiplication: the wNAF digits of its key's two half-scalars and of its
// random multiplier, with the tables they index.
type batchTerm struct {
	key    *liftedKey
	c1, c2 [wnafDigits]int8 // -(a·e) = c1 + c2·λ, against P and λP
	a      [wnafDigits]int8 // a, against -R
	lam    [keyTable]curve.G1Affine
	negR   [rTable]curve.G1Affine // -R, -3R, -5R, -7R
}

// sigScratch holds a batch's working memory; it is pooled with the rest
// of a batch's (batchScratch), so later batches reuse it.
type sigScratch struct {
	rest   []sigItem // the items verified as a batch
	random []byte
	terms  []batchTerm
	jac    []curve.G1Jac
	affine []curve.G1Affine
	zs     []fp.Element
}

// resized returns s with length n, reusing its array when it is large
// enough. The contents are not cleared.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// verifySigs reports whether every signature of items is valid, with
// BIP-340 batch verification: for random 128-bit a_i (a_0 = 1) it checks
//
//	(Σ a_i·s_i)·G − Σ a_i·R_i − Σ (a_i·e_i)·P_i = 0
//
// where R_i = lift_x(r_i), in one chain of doublings shared by all terms
// (Strauss' method). A false answer means at least one signature is
// invalid; a true answer is wrong with probability below 2^-128.
//
// In a batch of up to combAlone items, a signature whose key has a comb
// table is verified alone: that costs less than its share of a batch. One
// item left for the batch is verified alone too.
func (v *Verifier) verifySigs(items []sigItem, sc *sigScratch) bool {
	if len(items) > combAlone {
		return v.batchSigs(items, sc)
	}
	sc.rest = sc.rest[:0]
	defer func() { clear(sc.rest) }() // the scratch is pooled: drop the keys
	for i := range items {
		it := &items[i]
		if it.key.comb.Load() == nil {
			sc.rest = append(sc.rest, *it)
		} else if !v.verifySig(it.key, &it.msg, &it.sig) {
			return false
		}
	}
	switch len(sc.rest) {
	case 0:
		return true
	case 1:
		return v.verifySig(sc.rest[0].key, &sc.rest[0].msg, &sc.rest[0].sig)
	}
	return v.batchSigs(sc.rest, sc)
}

// combAlone is the largest batch whose much-used keys' signatures are
// verified alone, with their comb tables. Per signature
// (BenchmarkVerifyBatch, keys with comb tables, and BenchmarkVerifyCeiling,
// 200 such keys): alone 29 µs against a batch's 36 in batches of 16, but
// in batches of 64 over 200 keys 40 against 37 — their tables no longer
// fit the processor's cache, and the batch's terms share more doublings.
const combAlone = 32

// batchSigs is verifySigs' batch, for two or more items.
func (v *Verifier) batchSigs(items []sigItem, sc *sigScratch) bool {
	n := len(items)
	sc.random = resized(sc.random, 16*n)
	random := sc.random
	rand.Read(random)
	sc.terms = resized(sc.terms, n)
	terms := sc.terms
	sc.jac = resized(sc.jac, n*rTable)
	jac := sc.jac
	seven := fp.NewElement(7)

	var sum secp256k1.ModNScalar // Σ a_i·s_i
	top := -1
	for i := range items {
		it, t := &items[i], &terms[i]
		*t = batchTerm{} // wnaf writes only the non-zero digits
		r, err := fp.BigEndian.Element((*[32]byte)(it.sig[:32]))
		if err != nil {
			return false
		}
		var s secp256k1.ModNScalar
		if overflow := s.SetByteSlice(it.sig[32:]); overflow {
			return false
		}
		ch := v.challenge(it.sig[:32], &it.key.x, &it.msg)
		var e secp256k1.ModNScalar
		e.SetBytes(&ch)

		// -R_i: lift_x(r_i) has the even y; its negation the odd one.
		var y2, y fp.Element
		y2.Square(&r).Mul(&y2, &r).Add(&y2, &seven)
		if y.Sqrt(&y2) == nil {
			return false
		}
		if !isOdd(&y) {
			y.Neg(&y)
		}
		negR := curve.G1Affine{X: r, Y: y}
		var twice curve.G1Jac
		twice.DoubleMixed(&negR)
		odd := jac[i*rTable : (i+1)*rTable]
		odd[0].FromAffine(&negR)
		for j := 1; j < rTable; j++ {
			odd[j] = odd[j-1]
			odd[j].AddAssign(&twice)
		}

		var a secp256k1.ModNScalar
		if i == 0 {
			a.SetInt(1)
		} else {
			var b [32]byte
			copy(b[16:], random[16*i:16*i+16])
			a.SetBytes(&b)
		}
		var as, c secp256k1.ModNScalar
		as.Mul2(&a, &s)
		sum.Add(&as)
		c.Mul2(&a, &e).Negate()
		c1, c2 := splitScalar(&c)

		t.key = it.key
		top = max(top,
			wnaf(&t.c1, &c1, keyWindow),
			wnaf(&t.c2, &c2, keyWindow),
			wnaf(&t.a, &a, rWindow))
		for j := range t.lam {
			t.lam[j].X.Mul(&it.key.table[j].X, &endoBeta)
			t.lam[j].Y = it.key.table[j].Y
		}
	}
	sc.affine = resized(sc.affine, len(jac))
	sc.zs = resized(sc.zs, len(jac))
	affine := sc.affine
	toAffine(jac, affine, sc.zs)
	for i := range terms {
		copy(terms[i].negR[:], affine[i*rTable:])
	}

	s1, s2 := splitScalar(&sum)
	var ns1, ns2 [wnafDigits]int8
	top = max(top, wnaf(&ns1, &s1, baseWindow), wnaf(&ns2, &s2, baseWindow))
	base := baseMultiples()

	var q curve.G1Jac // the point at infinity (Z = 0)
	for pos := top; pos >= 0; pos-- {
		jacDouble(&q)
		for i := range terms {
			t := &terms[i]
			if d := t.c1[pos]; d != 0 {
				addDigit(&q, t.key.table[:], d)
			}
			if d := t.c2[pos]; d != 0 {
				addDigit(&q, t.lam[:], d)
			}
			if d := t.a[pos]; d != 0 {
				addDigit(&q, t.negR[:], d)
			}
		}
		if d := ns1[pos]; d != 0 {
			addDigit(&q, base.g[:], d)
		}
		if d := ns2[pos]; d != 0 {
			addDigit(&q, base.lamG[:], d)
		}
	}
	if !q.Z.IsZero() {
		return false
	}
	for i := range items {
		v.verified(items[i].key)
	}
	return true
}
