// Package libsecp256k1 is bitcoin-core's libsecp256k1, bundled as C source
// and compiled by cgo, reduced to what BIP-340 verification needs: parsing
// an x-only public key and checking a Schnorr signature against it. It needs
// no system package; see README.md for the origin of the sources.
//
// The API exists only when cgo is enabled and the purego build tag is not
// set; otherwise the package is empty. It imports no other Buzz package.
package libsecp256k1
