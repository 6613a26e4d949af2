//go:build cgo && !purego

package libsecp256k1

import (
	"encoding/hex"
	"testing"
)

func unhex(t *testing.T, s string, n int) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != n {
		t.Fatalf("bad %d-byte hex %q", n, s)
	}
	return b
}

// TestBIP340 runs the bundled library through BIP-340 test vectors 1 (a
// valid signature, also tampered with), 5 (a public key off the curve) and
// 14 (a public key x >= p); the nostr package runs the full set.
func TestBIP340(t *testing.T) {
	SelfTest()
	const (
		pub1 = "DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659"
		msg1 = "243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89"
		sig1 = "6896BD60EEAE296DB48A229FF71DFE071BDE413E6D43F917DC8DCF8C78DE33418906D11AC976ABCCB20B091292BFF4EA897EFCB639EA871CFA95F6DE339E4B0A"
	)
	var pk XOnlyPubKey
	if !ParseXOnlyPubKey(&pk, (*[32]byte)(unhex(t, pub1, 32))) {
		t.Fatal("vector 1: public key rejected")
	}
	msg := (*[32]byte)(unhex(t, msg1, 32))
	sig := (*[64]byte)(unhex(t, sig1, 64))
	if !pk.VerifySchnorr(sig, msg) {
		t.Fatal("vector 1: valid signature rejected")
	}
	for i := range sig {
		bad := *sig
		bad[i] ^= 0x01
		if pk.VerifySchnorr(&bad, msg) {
			t.Fatalf("vector 1: signature with byte %d changed accepted", i)
		}
	}
	badMsg := *msg
	badMsg[31] ^= 0x80
	if pk.VerifySchnorr(sig, &badMsg) {
		t.Fatal("vector 1: signature accepted for another message")
	}
	for _, bad := range []struct{ name, x string }{
		{"vector 5 (not on the curve)", "EEFDEA4CDB677750A420FEE807EACF21EB9898AE79B9768766E4FAA04A2D4A34"},
		{"vector 14 (x >= p)", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC30"},
	} {
		var k XOnlyPubKey
		if ParseXOnlyPubKey(&k, (*[32]byte)(unhex(t, bad.x, 32))) {
			t.Errorf("%s: public key accepted", bad.name)
		}
	}
}
