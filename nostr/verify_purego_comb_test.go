//go:build !libsecp256k1

package nostr

import (
	"crypto/sha256"
	"math/big"
	"strings"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// TestCombTable checks every entry of a key's and of G's comb table
// against the decred package's scalar multiplication by the entry's
// multiplier, Σ 2^(j·spacing) over the bits j of its index.
func TestCombTable(t *testing.T) {
	keys, points := testKeys(t, 2)
	var g secp256k1.JacobianPoint
	var one secp256k1.ModNScalar
	one.SetInt(1)
	secp256k1.ScalarBaseMultNonConst(&one, &g)
	tables := []*combTable{baseComb()}
	want := []secp256k1.JacobianPoint{g}
	for i, key := range keys {
		heatKey(key)
		tables = append(tables, key.comb.Load())
		want = append(want, points[i])
	}
	for i, tab := range tables {
		if len(tab.points) != 1<<tab.teeth-1 || tab.teeth*tab.spacing < 129 {
			t.Fatalf("table %d: %d points for %d teeth, %d bits", i, len(tab.points), tab.teeth, tab.teeth*tab.spacing)
		}
		for u := 1; u < 1<<tab.teeth; u++ {
			var m big.Int
			for j := range tab.teeth {
				if u>>j&1 == 1 {
					m.SetBit(&m, j*tab.spacing, 1)
				}
			}
			var mb [32]byte
			m.FillBytes(mb[:])
			var k secp256k1.ModNScalar
			k.SetBytes(&mb)
			var exp secp256k1.JacobianPoint
			secp256k1.ScalarMultNonConst(&k, &want[i], &exp)
			var jac curve.G1Jac
			jac.FromAffine(&tab.points[u-1])
			got := decredPoint(t, &jac)
			if !samePoint(&got, &exp) {
				t.Fatalf("table %d, entry %d: not %s·P", i, u, m.Text(16))
			}
		}
	}
}

// TestCombScalarSet checks that a scalar's columns put its magnitude's
// bits back together and its sign in neg, for every scalar of
// testScalars that fits (every split half does), and that one too large
// for the table is refused.
func TestCombScalarSet(t *testing.T) {
	n := secp256k1.Params().N
	for _, teeth := range []struct{ t, d int }{{keyCombTeeth, keyCombSpacing}, {baseCombTeeth, baseCombSpacing}} {
		for _, k := range testScalars(t) {
			k1, k2 := splitScalar(&k)
			for _, h := range []secp256k1.ModNScalar{k, k1, k2} {
				b := h.Bytes()
				val := new(big.Int).SetBytes(b[:])
				neg := h.IsOverHalfOrder()
				if neg {
					val.Sub(n, val)
				}
				var cs combScalar
				ok := cs.set(&h, teeth.t, teeth.d)
				if fits := val.BitLen() <= teeth.t*teeth.d; ok != fits {
					t.Fatalf("%x (%d bits): set = %v, want %v", b, val.BitLen(), ok, fits)
				}
				if !ok {
					continue
				}
				var back big.Int
				for c := range teeth.d {
					for j := range teeth.t {
						if cs.cols[c]>>j&1 == 1 {
							back.SetBit(&back, j*teeth.d+c, 1)
						}
					}
				}
				if back.Cmp(val) != 0 || cs.neg != neg {
					t.Fatalf("%x: columns give %s (neg %v), want %s (neg %v)", b, back.Text(16), cs.neg, val.Text(16), neg)
				}
			}
		}
	}
}

// TestMulAddCombMatchesIndependent is TestMulAddMatchesIndependent for the
// comb tables' chain.
func TestMulAddCombMatchesIndependent(t *testing.T) {
	testMulAdd(t, func(q *curve.G1Jac, s, e *secp256k1.ModNScalar, key *liftedKey) {
		if key.comb.Load() == nil {
			heatKey(key)
		}
		if !mulAddComb(q, s, e, key.comb.Load(), baseComb()) {
			t.Fatalf("s = %x, e = %x: a split half does not fit the comb", s.Bytes(), e.Bytes())
		}
	})
}

// TestCombAfterVerified checks that a key gets its comb table at its
// combAfter-th verified signature, not before and not for failed ones,
// that its cost in the cache then covers the table, and that its
// signatures still verify and still fail when they should.
func TestCombAfterVerified(t *testing.T) {
	withMetrics := func(c *verifierConfig) error { c.cacheMetrics = true; return nil }
	v := newTestVerifier(t, withMetrics)
	sk := SecretKey(sha256.Sum256([]byte("comb after")))
	good := signedEvent(t, sk, "hello")
	bad := signedEvent(t, sk, "hello")
	bad.Sig = strings.Repeat("0", 64) + bad.Sig[64:]
	key, ok := v.lookup(good.PubKey)
	if !ok {
		t.Fatal("lookup failed")
	}
	v.cache.Wait()
	for range 2 * combAfter {
		if err := v.Verify(bad); err == nil {
			t.Fatal("bad signature verified")
		}
	}
	for i := range combAfter {
		v.combs.wait()
		if key.comb.Load() != nil {
			t.Fatalf("comb table after %d verified signatures", i)
		}
		if i == combAfter-1 {
			// Another build runs: the eighth signature does not start one,
			// the ninth does once it is done.
			v.combs.slot <- struct{}{}
			if err := v.Verify(good); err != nil {
				t.Fatal(err)
			}
			v.combs.wait()
			if key.comb.Load() != nil {
				t.Fatal("a comb table was built while another build ran")
			}
			<-v.combs.slot
		}
		if err := v.Verify(good); err != nil {
			t.Fatal(err)
		}
	}
	v.combs.wait()
	if key.comb.Load() == nil {
		t.Fatalf("no comb table after %d verified signatures", combAfter)
	}
	v.cache.Wait()
	if cost := v.cache.Metrics.CostAdded() - v.cache.Metrics.CostEvicted(); cost != uint64(combCost) {
		t.Fatalf("cache holds cost %d, want %d (one key with its comb table)", cost, combCost)
	}
	if again, ok := v.lookup(good.PubKey); !ok || again != key {
		t.Fatal("the key left the cache")
	}
	if err := v.Verify(good); err != nil {
		t.Fatalf("with the comb table: %v", err)
	}
	if err := v.Verify(bad); err == nil {
		t.Fatal("with the comb table: bad signature verified")
	}
}

// TestBatchWithHotKeys puts keys with and without comb tables in one
// batch, small enough for the hot keys' signatures to be checked alone and
// too large for it: it passes when every signature is valid and fails when
// any one is not, whichever kind of key signed it.
func TestBatchWithHotKeys(t *testing.T) {
	v := newTestVerifier(t)
	for _, n := range []int{12, combAlone + 8} {
		events := batchEvents(t, n, 6)
		items := sigItemsOf(t, v, events)
		for i := range items {
			if i%2 == 0 {
				heatKey(items[i].key) // authors 0, 2, 4
			}
		}
		sc := &sigScratch{}
		if !v.verifySigs(items, sc) {
			t.Fatalf("a batch of %d valid signatures failed", n)
		}
		for i := range items {
			items[i].sig[40] ^= 1
			if v.verifySigs(items, sc) {
				t.Fatalf("a batch of %d with signature %d (hot key %v) broken passed", n, i, items[i].key.comb.Load() != nil)
			}
			items[i].sig[40] ^= 1
		}
		for _, it := range sc.rest[:cap(sc.rest)] {
			if it.key != nil {
				t.Fatal("the scratch keeps a key after the batch")
			}
		}
	}
}

// heatKey gives key whatever a much-used key has, as combAfter verified
// signatures would: its comb table, now.
func heatKey(key *liftedKey) { key.comb.Store(key.newComb()) }

// BenchmarkVerifySig measures one signature's check with a lifted key,
// through the wNAF chain a key starts with (path=wnaf) and through the
// comb tables a much-used key gets (path=comb).
func BenchmarkVerifySig(b *testing.B) {
	e, _ := benchEvent(b)
	v := newTestVerifier(b, WithPubKeyCacheSize(0)) // builds no comb table itself
	it, err := v.sigItemOf(e)
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"wnaf", "comb"} {
		b.Run("path="+path, func(b *testing.B) {
			if path == "comb" {
				heatKey(it.key)
			}
			for b.Loop() {
				if !v.verifySig(it.key, &it.msg, &it.sig) {
					b.Fatal("bad signature")
				}
			}
		})
	}
}
