package nostr

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// FuzzVerifyAgreesWithBtcec checks the build's verifier (lookup and
// verifySig, with and without the key cache, and with the key as a
// much-used key has it: heatKey) against btcec/v2's BIP-340
// verification on the same public key, message and signature. A seed
// signs msg with a key derived from seed and then flips the bit at flip
// (in the 96 bytes of public key and signature; none when flip is past
// them), so both valid and near-valid signatures are covered; raw inputs
// (pub, sig) exercise arbitrary bytes.
func FuzzVerifyAgreesWithBtcec(f *testing.F) {
	for _, tc := range bip340Vectors {
		f.Add([]byte(tc.pub), []byte(tc.msg), uint16(0xffff), mustHexBytes(f, tc.pub), mustHexBytes(f, tc.sig))
	}
	f.Add([]byte("a"), []byte("hello"), uint16(0xffff), []byte(nil), []byte(nil))
	f.Add([]byte("a"), []byte("hello"), uint16(0), []byte(nil), []byte(nil))
	f.Add([]byte("b"), []byte(""), uint16(37*8+3), []byte(nil), []byte(nil))
	f.Add([]byte("c"), []byte("x"), uint16(95*8+7), []byte(nil), []byte(nil))
	f.Add([]byte("d"), []byte("y"), uint16(40*8), []byte(nil), []byte(nil))
	cached := newTestVerifier(f, WithPubKeyCacheSize(64))
	uncached := newTestVerifier(f, WithPubKeyCacheSize(0))
	f.Fuzz(func(t *testing.T, seed, msgIn []byte, flip uint16, rawPub, rawSig []byte) {
		var pub [32]byte
		var sig [64]byte
		msg := sha256.Sum256(msgIn)
		if len(rawPub) == 32 && len(rawSig) == 64 {
			copy(pub[:], rawPub)
			copy(sig[:], rawSig)
		} else {
			sk := SecretKey(sha256.Sum256(seed))
			priv, err := sk.privateKey()
			if err != nil {
				return // zero or out-of-range secret
			}
			var aux [32]byte
			s, err := signHash(priv, &msg, &aux)
			if err != nil {
				t.Fatal(err)
			}
			sig = s
			DecodeLowerHex(pub[:], sk.PublicKey())
		}
		if int(flip) < 96*8 {
			if flip < 32*8 {
				pub[flip/8] ^= 1 << (flip % 8)
			} else {
				sig[flip/8-32] ^= 1 << (flip % 8)
			}
		}
		want := false
		if pk, err := schnorr.ParsePubKey(pub[:]); err == nil {
			if s, err := schnorr.ParseSignature(sig[:]); err == nil {
				want = s.Verify(msg[:], pk)
			}
		}
		for i, v := range []*Verifier{cached, uncached, uncached} {
			got := false
			if key, ok := v.lookup(hexLower(pub[:])); ok {
				if i == 2 {
					heatKey(key)
				}
				got = v.verifySig(key, &msg, &sig)
			}
			if got != want {
				t.Fatalf("backend %s, verifier %d: pub %x msg %x sig %x: verify = %v, btcec says %v", VerifyBackend, i, pub, msg, sig, got, want)
			}
		}
	})
}

func mustHexBytes(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func hexLower(b []byte) string { return hex.EncodeToString(b) }
