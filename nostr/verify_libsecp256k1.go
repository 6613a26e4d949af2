//go:build libsecp256k1

package nostr

/*
#cgo pkg-config: libsecp256k1
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
*/
import "C"

import "unsafe"

// VerifyBackend names the signature verification backend of this build.
const VerifyBackend = "libsecp256k1"

// liftedKey is a public key after lift_x, in libsecp256k1's parsed form.
type liftedKey struct {
	x  [32]byte
	pk C.secp256k1_xonly_pubkey
}

// backendSelfTest runs secp256k1_selftest, which libsecp256k1 asks for
// before its static context (the only context used here) is relied on. It
// detects a library built for the wrong platform; on failure libsecp256k1
// prints a message and aborts the process.
func backendSelfTest() error {
	C.secp256k1_selftest()
	return nil
}

// liftX performs BIP-340 lift_x via secp256k1_xonly_pubkey_parse, failing if
// x is not a valid coordinate (x >= p included).
func liftX(x *[32]byte) (*liftedKey, bool) {
	k := &liftedKey{x: *x}
	if C.secp256k1_xonly_pubkey_parse(C.secp256k1_context_static, &k.pk,
		(*C.uchar)(unsafe.Pointer(&x[0]))) != 1 {
		return nil, false
	}
	return k, true
}

// verifySig checks a BIP-340 signature of the 32-byte msg by key with
// libsecp256k1's secp256k1_schnorrsig_verify, run on its static context.
func (v *Verifier) verifySig(key *liftedKey, msg *[32]byte, sig *[64]byte) bool {
	return C.secp256k1_schnorrsig_verify(C.secp256k1_context_static,
		(*C.uchar)(unsafe.Pointer(&sig[0])),
		(*C.uchar)(unsafe.Pointer(&msg[0])), 32, &key.pk) == 1
}

// combBuilds is the pure-Go build's builder of comb tables; this build
// has none.
type combBuilds struct{}

func (*combBuilds) init() {}
func (*combBuilds) wait() {}

// batchVerification is false: the system library has no batch
// verification, so VerifyConcurrent calls Verify.
const batchVerification = false

// sigScratch is the pure-Go batch's working memory; this build needs none.
type sigScratch struct{}

// verifySigs reports whether every signature of items is valid, checking
// each with secp256k1_schnorrsig_verify (the system library has no batch
// verification).
func (v *Verifier) verifySigs(items []sigItem, _ *sigScratch) bool {
	for i := range items {
		if !v.verifySig(items[i].key, &items[i].msg, &items[i].sig) {
			return false
		}
	}
	return true
}
