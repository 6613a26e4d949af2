//go:build cgo && !purego

package libsecp256k1

/*
// One translation unit, as upstream's own build compiles it: the library,
// the extrakeys and schnorrsig modules, and the precomputed tables. The
// ECMULT_WINDOW_SIZE and COMB_* values are upstream's defaults, the ones
// the shipped precomputed_ecmult*.c tables were generated for.
#cgo CFLAGS: -I${SRCDIR}
#cgo CFLAGS: -DNDEBUG -DENABLE_MODULE_EXTRAKEYS=1 -DENABLE_MODULE_SCHNORRSIG=1
#cgo CFLAGS: -DECMULT_WINDOW_SIZE=15 -DCOMB_BLOCKS=11 -DCOMB_TEETH=6

#include "src/secp256k1.c"
#include "src/precomputed_ecmult.c"
#include "src/precomputed_ecmult_gen.c"
*/
import "C"

import "unsafe"

// XOnlyPubKey is a BIP-340 public key after lift_x (the curve point with the
// given x and an even y), in libsecp256k1's parsed form. The zero value is
// not a valid key; fill one with ParseXOnlyPubKey.
type XOnlyPubKey struct {
	k C.secp256k1_xonly_pubkey
}

// SelfTest runs secp256k1_selftest, which libsecp256k1 asks for before its
// static context (the only context this package uses) is relied on. It
// detects a library built for the wrong platform, such as the wrong
// endianness; on failure libsecp256k1 prints a message and aborts the
// process, as upstream does.
func SelfTest() {
	C.secp256k1_selftest()
}

// ParseXOnlyPubKey performs BIP-340 lift_x on the 32-byte x coordinate x
// into pk (secp256k1_xonly_pubkey_parse). It reports false, leaving pk
// invalid, when x is not the x coordinate of a curve point (x >= p
// included).
func ParseXOnlyPubKey(pk *XOnlyPubKey, x *[32]byte) bool {
	return C.secp256k1_xonly_pubkey_parse(C.secp256k1_context_static, &pk.k,
		(*C.uchar)(unsafe.Pointer(&x[0]))) == 1
}

// VerifySchnorr reports whether sig is a valid BIP-340 signature of the
// 32-byte msg by pk (secp256k1_schnorrsig_verify). pk must have been filled
// by a successful ParseXOnlyPubKey.
func (pk *XOnlyPubKey) VerifySchnorr(sig *[64]byte, msg *[32]byte) bool {
	return C.secp256k1_schnorrsig_verify(C.secp256k1_context_static,
		(*C.uchar)(unsafe.Pointer(&sig[0])),
		(*C.uchar)(unsafe.Pointer(&msg[0])), 32, &pk.k) == 1
}
