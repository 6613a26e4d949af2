//go:build libsecp256k1 && !cgo

package nostr

// The libsecp256k1 build tag links the system libsecp256k1 through cgo; with
// cgo off the build stops here rather than fall back to another verifier.
var _ = the_libsecp256k1_build_tag_needs_cgo_enabled
