package nostr

import (
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// BenchmarkVerifyBtcecSchnorr is the baseline the Verifier improves on:
// btcec's own schnorr.Verify. key=each lifts the key on every call, as
// BenchmarkVerify/cache=miss does; key=once parses it once, as
// BenchmarkVerify/cache=hit has it from the cache.
func BenchmarkVerifyBtcecSchnorr(b *testing.B) {
	e, _ := benchEvent(b)
	id, _ := hex.DecodeString(e.ID)
	sigb, _ := hex.DecodeString(e.Sig)
	pkb, _ := hex.DecodeString(e.PubKey)
	b.Run("key=each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pk, err := schnorr.ParsePubKey(pkb)
			if err != nil {
				b.Fatal(err)
			}
			sig, err := schnorr.ParseSignature(sigb)
			if err != nil {
				b.Fatal(err)
			}
			if !sig.Verify(id, pk) {
				b.Fatal("bad signature")
			}
		}
	})
	b.Run("key=once", func(b *testing.B) {
		pk, err := schnorr.ParsePubKey(pkb)
		if err != nil {
			b.Fatal(err)
		}
		sig, err := schnorr.ParseSignature(sigb)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if !sig.Verify(id, pk) {
				b.Fatal("bad signature")
			}
		}
	})
}
