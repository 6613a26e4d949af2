package nostr

import (
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// BenchmarkVerifyBtcecSchnorr is the baseline the Verifier improves on:
// btcec's own schnorr.ParsePubKey + Signature.Verify, which lifts the key on
// every call (Verify re-parses the serialized key internally).
func BenchmarkVerifyBtcecSchnorr(b *testing.B) {
	e, _ := benchEvent(b)
	id, _ := hex.DecodeString(e.ID)
	sigb, _ := hex.DecodeString(e.Sig)
	pkb, _ := hex.DecodeString(e.PubKey)
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
}
