//go:build libsecp256k1

package nostr

/*
#cgo LDFLAGS: -lsecp256k1
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
*/
import "C"

import (
	"errors"
	"unsafe"
)

// VerifyBackend names the signature verification backend of this build.
const VerifyBackend = "libsecp256k1"

// liftedKey is a public key after lift_x, in libsecp256k1's opaque form.
type liftedKey struct {
	x  [32]byte
	pk C.secp256k1_xonly_pubkey
}

// backendSelfTest runs libsecp256k1's own self test, required before using
// its static context.
func backendSelfTest() error {
	C.secp256k1_selftest()
	if C.secp256k1_context_static == nil {
		return errors.New("nostr: libsecp256k1 static context unavailable")
	}
	return nil
}

// liftX performs BIP-340 lift_x via secp256k1_xonly_pubkey_parse.
func liftX(x *[32]byte) (*liftedKey, bool) {
	k := &liftedKey{x: *x}
	if C.secp256k1_xonly_pubkey_parse(C.secp256k1_context_static, &k.pk,
		(*C.uchar)(unsafe.Pointer(&x[0]))) != 1 {
		return nil, false
	}
	return k, true
}

// verifySig checks a BIP-340 signature of the 32-byte msg by key with
// secp256k1_schnorrsig_verify.
func (v *Verifier) verifySig(key *liftedKey, msg *[32]byte, sig *[64]byte) bool {
	return C.secp256k1_schnorrsig_verify(C.secp256k1_context_static,
		(*C.uchar)(unsafe.Pointer(&sig[0])),
		(*C.uchar)(unsafe.Pointer(&msg[0])), 32, &key.pk) == 1
}
