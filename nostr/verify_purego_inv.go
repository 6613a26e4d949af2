//go:build !libsecp256k1

package nostr

import (
	"math/bits"

	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
)

// invert sets z to 1/x (0 for x = 0) with Bernstein and Yang's safegcd in
// its variable-time form, as libsecp256k1's modinv64_var computes it: the
// extended GCD of p and x in batches of 62 "divsteps", each batch a 2×2
// matrix of 64-bit numbers applied to the 256-bit values. It takes about a
// third of Fermat's x^(p-2) and allocates nothing. Its running time depends
// on x, which in signature verification is public. x is in gnark-crypto's
// Montgomery form, x·2^256; the inverse of those words is x⁻¹·2^-256, and a
// Montgomery multiplication by 2^768 brings it to x⁻¹·2^256.
func invert(z, x *fp.Element) {
	in := [4]uint64(*x)
	g := toSigned62(&in)
	out := modinvVar(g)
	*z = fp.Element(fromSigned62(&out))
	z.Mul(z, &montR3)
}

// montR3 holds the words of 2^768 mod p.
var montR3 = fp.Element{0x002bb1e33795f671, 0x0000000100000b73, 0, 0}

// signed62 is a number as five signed limbs of 62 bits: Σ v[i]·2^(62·i).
type signed62 [5]int64

const mask62 = 1<<62 - 1

// p in signed62 form (2^256 - (2^32 + 977)), and p⁻¹ mod 2^62.
var pSigned62 = signed62{-0x1000003D1, 0, 0, 0, 256}

const pInv62 = 0x27C7F6E22DDACACF

// toSigned62 converts a number below 2^256 from four 64-bit words.
func toSigned62(a *[4]uint64) signed62 {
	return signed62{
		int64(a[0] & mask62),
		int64((a[0]>>62 | a[1]<<2) & mask62),
		int64((a[1]>>60 | a[2]<<4) & mask62),
		int64((a[2]>>58 | a[3]<<6) & mask62),
		int64(a[3] >> 56),
	}
}

// fromSigned62 converts a normalized number (every limb non-negative, the
// lower four under 2^62, the value below 2^256) to four 64-bit words.
func fromSigned62(r *signed62) [4]uint64 {
	return [4]uint64{
		uint64(r[0]) | uint64(r[1])<<62,
		uint64(r[1])>>2 | uint64(r[2])<<60,
		uint64(r[2])>>4 | uint64(r[3])<<58,
		uint64(r[3])>>6 | uint64(r[4])<<56,
	}
}

// trans2x2 is the matrix of a batch of 62 divsteps, scaled by 2^62.
type trans2x2 struct{ u, v, q, r int64 }

// int128 is a signed 128-bit accumulator.
type int128 struct {
	lo uint64
	hi int64
}

// mulI128 returns a·b.
func mulI128(a, b int64) int128 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	// The unsigned product's high word, corrected for negative factors.
	if a < 0 {
		hi -= uint64(b)
	}
	if b < 0 {
		hi -= uint64(a)
	}
	return int128{lo: lo, hi: int64(hi)}
}

// accumMul adds a·b to x.
func (x *int128) accumMul(a, b int64) {
	p := mulI128(a, b)
	var c uint64
	x.lo, c = bits.Add64(x.lo, p.lo, 0)
	x.hi += p.hi + int64(c)
}

// shift62 shifts x right by 62 bits, keeping its sign.
func (x *int128) shift62() {
	x.lo = x.lo>>62 | uint64(x.hi)<<2
	x.hi >>= 62
}

// divsteps62Var performs 62 divsteps on the low words of f (odd) and g,
// with eta = -delta, and returns the new eta with the batch's matrix in t.
func divsteps62Var(eta int64, f0, g0 uint64, t *trans2x2) int64 {
	u, v, q, r := uint64(1), uint64(0), uint64(0), uint64(1)
	f, g := f0, g0
	i := 62
	for {
		// The zeros at g's bottom are divsteps that only halve g; a
		// sentinel bit stops the count at i.
		zeros := bits.TrailingZeros64(g | ^uint64(0)<<uint(i))
		g >>= uint(zeros)
		u <<= uint(zeros)
		v <<= uint(zeros)
		eta -= int64(zeros)
		i -= zeros
		if i == 0 {
			break
		}
		var w uint64
		if eta < 0 {
			// Swap f and g (g becomes -f) and cancel up to six bits of g:
			// no more than i (the batch ends there) nor eta+1 (eta's sign
			// flips again there).
			eta = -eta
			f, g = g, -f
			u, q = q, -u
			v, r = r, -v
			limit := min(int(eta)+1, i)
			m := (^uint64(0) >> uint(64-limit)) & 63
			w = (f * g * (f*f - 2)) & m
		} else {
			// Cancel up to four bits of g.
			limit := min(int(eta)+1, i)
			m := (^uint64(0) >> uint(64-limit)) & 15
			w = f + ((f + 1) & 4 << 1)
			w = (-w * g) & m
		}
		g += f * w
		q += u * w
		r += v * w
	}
	*t = trans2x2{u: int64(u), v: int64(v), q: int64(q), r: int64(r)}
	return eta
}

// updateDE62 sets (d, e) to t·(d, e)/2^62 mod p, keeping them in (-2p, p).
func updateDE62(d, e *signed62, t *trans2x2) {
	// md, me start as zero, plus (u, q) if d is negative, plus (v, r) if
	// e is.
	sd, se := d[4]>>63, e[4]>>63
	md := (t.u & sd) + (t.v & se)
	me := (t.q & sd) + (t.r & se)
	var cd, ce int128
	cd.accumMul(t.u, d[0])
	cd.accumMul(t.v, e[0])
	ce.accumMul(t.q, d[0])
	ce.accumMul(t.r, e[0])
	// Correct md, me so that t·(d, e) + p·(md, me) has 62 zero low bits.
	md -= int64((pInv62*cd.lo + uint64(md)) & mask62)
	me -= int64((pInv62*ce.lo + uint64(me)) & mask62)
	cd.accumMul(pSigned62[0], md)
	ce.accumMul(pSigned62[0], me)
	cd.shift62()
	ce.shift62()
	for i := 1; i < len(d); i++ {
		cd.accumMul(t.u, d[i])
		cd.accumMul(t.v, e[i])
		ce.accumMul(t.q, d[i])
		ce.accumMul(t.r, e[i])
		if pi := pSigned62[i]; pi != 0 { // p's limbs 1 to 3 are zero
			cd.accumMul(pi, md)
			ce.accumMul(pi, me)
		}
		d[i-1] = int64(cd.lo & mask62)
		cd.shift62()
		e[i-1] = int64(ce.lo & mask62)
		ce.shift62()
	}
	d[4] = int64(cd.lo)
	e[4] = int64(ce.lo)
}

// updateFG62Var sets (f, g) to t·(f, g)/2^62, on their first n limbs.
func updateFG62Var(n int, f, g *signed62, t *trans2x2) {
	var cf, cg int128
	cf.accumMul(t.u, f[0])
	cf.accumMul(t.v, g[0])
	cg.accumMul(t.q, f[0])
	cg.accumMul(t.r, g[0])
	cf.shift62() // the low 62 bits are zero
	cg.shift62()
	for i := 1; i < n; i++ {
		cf.accumMul(t.u, f[i])
		cf.accumMul(t.v, g[i])
		cg.accumMul(t.q, f[i])
		cg.accumMul(t.r, g[i])
		f[i-1] = int64(cf.lo & mask62)
		cf.shift62()
		g[i-1] = int64(cg.lo & mask62)
		cg.shift62()
	}
	f[n-1] = int64(cf.lo)
	g[n-1] = int64(cg.lo)
}

// normalize62 brings r from (-2p, p) to [0, p), negated first if sign is
// negative.
func normalize62(r *signed62, sign int64) {
	r.addPIfNegative()
	neg := sign >> 63
	for i := range r {
		r[i] = (r[i] ^ neg) - neg
	}
	r.carry()
	r.addPIfNegative()
	r.carry()
}

// addPIfNegative adds p to r when r is negative.
func (r *signed62) addPIfNegative() {
	add := r[4] >> 63
	for i := range r {
		r[i] += pSigned62[i] & add
	}
}

// carry brings the lower four limbs of r into [0, 2^62), moving their
// excess into the limb above.
func (r *signed62) carry() {
	for i := range len(r) - 1 {
		r[i+1] += r[i] >> 62
		r[i] &= mask62
	}
}

// modinvVar returns x⁻¹ mod p for x in [0, p) (0 for 0).
func modinvVar(x signed62) signed62 {
	d := signed62{}
	e := signed62{1}
	f := pSigned62
	g := x
	n := 5
	eta := int64(-1) // -delta; delta starts at 1
	for {
		var t trans2x2
		eta = divsteps62Var(eta, uint64(f[0]), uint64(g[0]), &t)
		updateDE62(&d, &e, &t)
		updateFG62Var(n, &f, &g, &t)
		if g[0] == 0 {
			var any int64
			for j := 1; j < n; j++ {
				any |= g[j]
			}
			if any == 0 {
				break
			}
		}
		// When f's and g's top limbs are both 0 or -1, drop a limb,
		// moving its sign into the one below.
		fn, gn := f[n-1], g[n-1]
		cond := int64(n-2) >> 63
		cond |= fn ^ fn>>63
		cond |= gn ^ gn>>63
		if cond == 0 {
			f[n-2] |= int64(uint64(fn) << 62)
			g[n-2] |= int64(uint64(gn) << 62)
			n--
		}
	}
	// g is 0 and f is ±1 (p is prime): d·x = f.
	normalize62(&d, f[n-1])
	return d
}
