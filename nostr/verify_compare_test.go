package nostr

import (
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"gitlab.com/yawning/secp256k1-voi/secec/bitcoin"
)

// BenchmarkSchnorrLibraries compares the two pure-Go BIP-340 verifiers in
// one binary (so one run sees the same machine load), each with the public
// key parsed once, as the Verifier's key cache has it: btcec/v2's
// schnorr.Verify and secp256k1-voi's SchnorrPublicKey.Verify. The
// Verifier's own per-backend cost is BenchmarkVerify, built with cgo and no
// tag (the bundled libsecp256k1), -tags purego (secp256k1-voi) or -tags
// btcec.
func BenchmarkSchnorrLibraries(b *testing.B) {
	e, _ := benchEvent(b)
	id, _ := hex.DecodeString(e.ID)
	sigb, _ := hex.DecodeString(e.Sig)
	pkb, _ := hex.DecodeString(e.PubKey)
	b.Run("lib=btcec", func(b *testing.B) {
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
	b.Run("lib=secp256k1-voi", func(b *testing.B) {
		pk, err := bitcoin.NewSchnorrPublicKey(pkb)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if !pk.Verify(id, sigb) {
				b.Fatal("bad signature")
			}
		}
	})
}
