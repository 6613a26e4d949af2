//go:build !libsecp256k1

package nostr

import (
	"encoding/hex"
	"sync"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// A key that has signed a few verified events gets a comb table (Lim and
// Lee's fixed-base comb), and G has one for the process. With t teeth and
// spacing d, entry u of a point's table is the sum of 2^(j·d)·P over the
// bits j of u, so a half-length scalar k (under 2^(t·d)) is the sum over
// its d columns c of 2^c·T[u_c], where bit j of u_c is bit j·d+c of k:
// d doublings and at most d additions, against the about 128 doublings
// the wNAF chain needs. The endomorphism needs no table of its own:
// λ·T[u] is T[u] with its x multiplied by β.
//
// A comb table costs about 130 µs to build and 16 KiB to keep (G's, with
// more teeth, 64 KiB); it takes a verification from about 53 to 30 µs, so
// it pays for itself after a handful of events, and it is built only for
// keys that have already signed combAfter events that verified. In the key cache
// such a key costs combCost keys, so the cache's memory bound holds.
const (
	keyCombTeeth    = 8
	keyCombSpacing  = 17 // keyCombTeeth·keyCombSpacing = 136 bits
	baseCombTeeth   = 10
	baseCombSpacing = 14 // 140 bits
	maxCombSpacing  = keyCombSpacing

	// combAfter is the number of verified signatures of a key after which
	// its comb table is built.
	combAfter = 8
)

// maxCombSpacing bounds both spacings (combScalar's columns), and every
// split half, under 2^129, fits both tables: checked at compile time.
const (
	_ = uint(maxCombSpacing - baseCombSpacing)
	_ = uint(keyCombTeeth*keyCombSpacing - 129)
	_ = uint(baseCombTeeth*baseCombSpacing - 129)
)

// combCost is the cache cost of a key with a comb table, counted in keys
// without one.
const combCost = 1 + int64((unsafe.Sizeof(curve.G1Affine{})*(1<<keyCombTeeth-1)+unsafe.Sizeof(liftedKey{})-1)/unsafe.Sizeof(liftedKey{}))

// combTable is a point's comb table: points[u-1] is Σ 2^(j·spacing)·P over
// the bits j of u, for u from 1 to 2^teeth - 1, in affine form. It is
// never written after it is built.
type combTable struct {
	teeth, spacing int
	points         []curve.G1Affine
}

// newCombTable builds p's comb table with the given teeth and spacing.
// No entry is the point at infinity: each is a multiple of p by a positive
// number below 2^(teeth·spacing), which is below the group's order.
func newCombTable(p *curve.G1Affine, teeth, spacing int) *combTable {
	n := 1<<teeth - 1
	jac := make([]curve.G1Jac, n)
	// The teeth: entry 2^j - 1 is 2^(j·spacing)·p.
	jac[0].FromAffine(p)
	for j := 1; j < teeth; j++ {
		t := &jac[1<<j-1]
		*t = jac[1<<(j-1)-1]
		for range spacing {
			jacDouble(t)
		}
	}
	// Every other entry is its top tooth plus the entry of its lower bits;
	// the two are different multiples of p, so the addition never doubles.
	for j := 1; j < teeth; j++ {
		top := 1 << j
		for low := 1; low < top; low++ {
			e := &jac[top+low-1]
			*e = jac[low-1]
			e.AddAssign(&jac[top-1])
		}
	}
	t := &combTable{teeth: teeth, spacing: spacing, points: make([]curve.G1Affine, n)}
	toAffine(jac, t.points, make([]fp.Element, n))
	return t
}

// newComb builds the key's comb table from P, the first of its odd
// multiples.
func (key *liftedKey) newComb() *combTable {
	return newCombTable(&key.table[0], keyCombTeeth, keyCombSpacing)
}

// baseComb returns G's comb table, built on first use.
var baseComb = sync.OnceValue(func() *combTable {
	_, g := curve.Generators()
	return newCombTable(&g, baseCombTeeth, baseCombSpacing)
})

// combScalar is a half-length scalar in a comb table's columns.
type combScalar struct {
	cols [maxCombSpacing]uint16 // cols[c] is column c, 0 for none
	neg  bool                   // the scalar is the negation of these columns'
}

// set writes k's columns for a table of the given teeth and spacing. It
// reports false when k (or its negation, whichever is smaller) does not
// fit the table's teeth·spacing bits; a split scalar always fits.
func (cs *combScalar) set(k *secp256k1.ModNScalar, teeth, spacing int) bool {
	var limbs [4]uint64
	limbs, cs.neg = absLimbs(k)
	bits := teeth * spacing
	for i := range 4 {
		if lo := 64 * i; lo+64 > bits && limbs[i]>>max(bits-lo, 0) != 0 {
			return false
		}
	}
	for c := range spacing {
		var u uint16
		for j := range teeth {
			pos := j*spacing + c
			u |= uint16(limbs[pos>>6]>>(pos&63)&1) << j
		}
		cs.cols[c] = u
	}
	return true
}

// addComb adds column c of k against table t to q: T[u_c], its x
// multiplied by β when lam, negated when k is.
func addComb(q *curve.G1Jac, t *combTable, k *combScalar, c int, lam bool) {
	u := k.cols[c]
	if u == 0 {
		return
	}
	p := &t.points[u-1]
	if !lam && !k.neg {
		jacAddAffine(q, p)
		return
	}
	a := *p
	if lam {
		a.X.Mul(&a.X, &endoBeta)
	}
	if k.neg {
		a.Y.Neg(&a.Y)
	}
	jacAddAffine(q, &a)
}

// mulAddComb sets q to s*G + e*P with G's and the key's comb tables: the
// halves of s and e, column by column, in one chain of maxCombSpacing
// doublings. It reports false, leaving q unspecified, if a half does not
// fit its table (it always does).
func mulAddComb(q *curve.G1Jac, s, e *secp256k1.ModNScalar, key, base *combTable) bool {
	e1, e2 := splitScalar(e)
	s1, s2 := splitScalar(s)
	var ce1, ce2, cs1, cs2 combScalar
	if !ce1.set(&e1, key.teeth, key.spacing) || !ce2.set(&e2, key.teeth, key.spacing) ||
		!cs1.set(&s1, base.teeth, base.spacing) || !cs2.set(&s2, base.teeth, base.spacing) {
		return false
	}
	*q = curve.G1Jac{} // the point at infinity (Z = 0)
	for c := max(key.spacing, base.spacing) - 1; c >= 0; c-- {
		jacDouble(q)
		if c < key.spacing {
			addComb(q, key, &ce1, c, false)
			addComb(q, key, &ce2, c, true)
		}
		if c < base.spacing {
			addComb(q, base, &cs1, c, false)
			addComb(q, base, &cs2, c, true)
		}
	}
	return true
}

// combBuilds runs the builds of comb tables, one at a time, each on a
// goroutine of its own: the verification that earns a key its table does
// not wait for it, nor do the calls queued behind it. Built inline, the
// tables of 200 authors reaching their eighth event within a fraction of
// a second raised an authenticated closed loop's OK p99 by a quarter.
type combBuilds struct {
	slot chan struct{} // holds a token while a build runs
	wg   sync.WaitGroup
}

func (b *combBuilds) init() { b.slot = make(chan struct{}, 1) }

// wait returns once no build runs.
func (b *combBuilds) wait() { b.wg.Wait() }

// verified counts a verified signature of key and, at the combAfter-th,
// starts the build of the key's comb table, after which the cache is told
// the key's new cost. Only the call that counts the combAfter-th starts
// it; if another build is running, the count is taken back, so a later
// verification tries again.
func (v *Verifier) verified(key *liftedKey) {
	if v.cache == nil || key.comb.Load() != nil || key.verified.Add(1) != combAfter {
		return
	}
	select {
	case v.combs.slot <- struct{}{}:
	default:
		key.verified.Add(^uint32(0))
		return
	}
	v.combs.wg.Add(1)
	go func() {
		defer v.combs.wg.Done()
		key.comb.Store(key.newComb())
		v.cache.Set(hex.EncodeToString(key.x[:]), key, combCost)
		<-v.combs.slot
	}()
}
