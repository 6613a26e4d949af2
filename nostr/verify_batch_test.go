package nostr

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// batchEvents returns n events signed by keys authors in turn.
func batchEvents(tb testing.TB, n, authors int) []*Event {
	tb.Helper()
	keys := make([]SecretKey, authors)
	for i := range keys {
		keys[i] = SecretKey(sha256.Sum256([]byte("batch key " + strconv.Itoa(i))))
	}
	events := make([]*Event, n)
	for i := range events {
		e := &Event{CreatedAt: 1700000000 + int64(i), Kind: 1, Content: "batch " + strconv.Itoa(i)}
		if err := e.Sign(keys[i%authors]); err != nil {
			tb.Fatal(err)
		}
		events[i] = e
	}
	return events
}

// sigItemsOf lifts the events' keys and decodes their ids and signatures.
func sigItemsOf(t *testing.T, v *Verifier, events []*Event) []sigItem {
	t.Helper()
	items := make([]sigItem, len(events))
	for i, e := range events {
		key, ok := v.lookup(e.PubKey)
		if !ok || !DecodeLowerHex(items[i].msg[:], e.ID) || !DecodeLowerHex(items[i].sig[:], e.Sig) {
			t.Fatalf("event %d: cannot decode", i)
		}
		items[i].key = key
	}
	return items
}

// TestVerifySigsBIP340Vectors puts each BIP-340 test vector with a valid
// public key into batches of valid signatures, first, in the middle and
// last: the batch must pass exactly when the vector is valid.
func TestVerifySigsBIP340Vectors(t *testing.T) {
	v := newTestVerifier(t)
	good := sigItemsOf(t, v, batchEvents(t, 6, 3))
	sc := &sigScratch{} // reused, as a caller's batches reuse theirs
	for _, tc := range bip340Vectors {
		key, ok := v.lookup(hexLower(mustHexBytes(t, tc.pub)))
		if !ok {
			continue // an invalid public key never reaches a batch
		}
		it := sigItem{key: key}
		msg := mustHexBytes(t, tc.msg)
		if len(msg) != 32 {
			continue // the vectors of other message lengths
		}
		copy(it.msg[:], msg)
		copy(it.sig[:], mustHexBytes(t, tc.sig))
		for _, at := range []int{0, 3, len(good)} {
			batch := append(append(append([]sigItem{}, good[:at]...), it), good[at:]...)
			if got := v.verifySigs(batch, sc); got != tc.valid {
				t.Errorf("vector %d at %d of %d: batch = %v, want %v", tc.index, at, len(batch), got, tc.valid)
			}
		}
	}
}

// TestVerifySigsCancellingErrors changes two signatures' s by +δ and -δ:
// with equal multipliers the batch equation would still hold. The random
// multipliers must catch it.
func TestVerifySigsCancellingErrors(t *testing.T) {
	v := newTestVerifier(t)
	items := sigItemsOf(t, v, batchEvents(t, 8, 8))
	var delta secp256k1.ModNScalar
	delta.SetInt(12345)
	shift := func(it *sigItem, d *secp256k1.ModNScalar) {
		var s secp256k1.ModNScalar
		s.SetByteSlice(it.sig[32:])
		s.Add(d)
		b := s.Bytes()
		copy(it.sig[32:], b[:])
	}
	var neg secp256k1.ModNScalar
	neg.NegateVal(&delta)
	for i := range 7 {
		batch := append([]sigItem{}, items...)
		shift(&batch[i], &delta)
		shift(&batch[i+1], &neg)
		for k := range batch {
			want := k != i && k != i+1
			if got := v.verifySig(batch[k].key, &batch[k].msg, &batch[k].sig); got != want {
				t.Fatalf("signature %d alone verifies %v, want %v", k, got, want)
			}
		}
		if v.verifySigs(batch, &sigScratch{}) {
			t.Errorf("signatures %d and %d, s shifted by +δ and -δ: the batch passed", i, i+1)
		}
	}
}

// TestVerifyBatchAfterBadSignature: a batch with a bad signature is
// checked one by one, and so are the batches after it until one is clean;
// then batches are checked together again.
func TestVerifyBatchAfterBadSignature(t *testing.T) {
	v := newTestVerifier(t)
	events := batchEvents(t, 8, 4)
	bad := *events[3]
	bad.Sig = bad.Sig[:127] + flipHex(bad.Sig[127])
	withBad := append(append(append([]*Event{}, events[:3]...), &bad), events[4:]...)
	if errs := v.VerifyBatch(withBad); errs[3] != ErrBadSignature || errs[2] != nil || errs[4] != nil {
		t.Fatalf("batch with a bad signature: %v", errs)
	}
	if !v.batches.failing.Load() {
		t.Fatal("after a batch with a bad signature: not checking one by one")
	}
	if errs := v.VerifyBatch(events); slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		t.Fatalf("clean batch: %v", errs)
	}
	if v.batches.failing.Load() {
		t.Fatal("after a clean batch checked one by one: still checking one by one")
	}
}

// TestVerifyBatch checks VerifyBatch against Verify on batches of every
// size up to past maxBatch, with bad ids and signatures among valid ones.
func TestVerifyBatch(t *testing.T) {
	v := newTestVerifier(t)
	events := batchEvents(t, maxBatch+7, 5)
	bad := func(i, how int) *Event {
		e := *events[i]
		switch how % 4 {
		case 0:
			e.Content += "!" // id no longer matches
		case 1:
			e.Sig = e.Sig[:100] + flipHex(e.Sig[100]) + e.Sig[101:] // s changed
		case 2:
			e.Sig = flipHex(e.Sig[0]) + e.Sig[1:] // r changed
		case 3:
			e.Sig = "zz" + e.Sig[2:] // not hex
		}
		return &e
	}
	for n := 0; n <= len(events); n++ {
		for _, badAt := range []int{-1, 0, n / 2, n - 1} {
			batch := append([]*Event{}, events[:n]...)
			if badAt >= 0 && badAt < n {
				batch[badAt] = bad(badAt, n)
			}
			errs := v.VerifyBatch(batch)
			if len(errs) != n {
				t.Fatalf("n=%d: %d results", n, len(errs))
			}
			for i, e := range batch {
				if want := v.Verify(e); !errors.Is(errs[i], want) || (want == nil) != (errs[i] == nil) {
					t.Fatalf("n=%d bad at %d: event %d: VerifyBatch says %v, Verify %v", n, badAt, i, errs[i], want)
				}
			}
		}
	}
}

func flipHex(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}

// TestVerifyConcurrent runs many VerifyConcurrent calls at once, valid and
// invalid, and checks each answer against Verify.
func TestVerifyConcurrent(t *testing.T) {
	v := newTestVerifier(t)
	events := batchEvents(t, 400, 20)
	for i := 0; i < len(events); i += 7 {
		e := *events[i]
		e.Sig = e.Sig[:127] + flipHex(e.Sig[127])
		events[i] = &e
	}
	want := make([]error, len(events))
	for i, e := range events {
		want[i] = v.Verify(e)
	}
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make([]error, len(events))
		for g := range 16 {
			wg.Go(func() {
				for i := g; i < len(events); i += 16 {
					errs[i] = v.VerifyConcurrent(events[i])
				}
			})
		}
		wg.Wait()
		for i := range events {
			if errs[i] != want[i] {
				t.Fatalf("round %d event %d: VerifyConcurrent says %v, Verify %v", round, i, errs[i], want[i])
			}
		}
	}
	v.batches.mu.Lock()
	defer v.batches.mu.Unlock()
	if v.batches.leaders != 0 || len(v.batches.queue) != 0 {
		t.Fatalf("after the calls: %d leaders, %d queued", v.batches.leaders, len(v.batches.queue))
	}
}

// FuzzVerifySigsAgrees checks a batch's answer against its signatures
// checked one by one, with any one bit of one signature flipped.
func FuzzVerifySigsAgrees(f *testing.F) {
	f.Add(uint8(5), uint16(0xffff))
	f.Add(uint8(2), uint16(0))
	f.Add(uint8(9), uint16(64*8-1))
	f.Add(uint8(1), uint16(3*512+300))
	v := newTestVerifier(f)
	events := batchEvents(f, 40, 10)
	sc := &sigScratch{} // reused across inputs of every size
	f.Fuzz(func(t *testing.T, n uint8, flip uint16) {
		batch := sigItemsOf(t, v, events[:1+int(n)%len(events)])
		if i := int(flip) / 512; i < len(batch) {
			batch[i].sig[flip%512/8] ^= 1 << (flip % 8)
		}
		want := true
		for k := range batch {
			want = want && v.verifySig(batch[k].key, &batch[k].msg, &batch[k].sig)
		}
		if got := v.verifySigs(batch, sc); got != want {
			t.Fatalf("batch of %d, bit %d flipped: batch = %v, one by one %v", len(batch), flip, got, want)
		}
	})
}

// BenchmarkVerifyBatch reports the cost per signature of VerifyBatch by
// batch size (size 1 is Verify's cost).
func BenchmarkVerifyBatch(b *testing.B) {
	events := batchEvents(b, 64, 200)
	for _, size := range []int{1, 2, 4, 8, 16, 32, 64} {
		b.Run(fmt.Sprintf("size=%d/verifier=%s", size, VerifyBackend), func(b *testing.B) {
			v := newTestVerifier(b)
			v.VerifyBatch(events)
			v.cache.Wait()
			b.ReportAllocs()
			for b.Loop() {
				for _, err := range v.VerifyBatch(events[:size]) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/sig")
		})
	}
}
