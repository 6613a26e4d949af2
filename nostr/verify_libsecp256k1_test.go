//go:build cgo && !purego && !btcec

package nostr

import (
	"testing"

	"github.com/buzzrelay/buzz/nostr/internal/libsecp256k1"
)

// TestDefaultCgoBackendIsBundledLibsecp256k1 pins what a default cgo build
// (`go run`, `go build` with a C compiler) verifies with: the bundled
// libsecp256k1. It does not compile unless the lifted key is
// libsecp256k1's, so this build cannot fall back to another backend and
// still pass.
func TestDefaultCgoBackendIsBundledLibsecp256k1(t *testing.T) {
	if VerifyBackend != "libsecp256k1" {
		t.Fatalf("VerifyBackend = %q, want libsecp256k1", VerifyBackend)
	}
	k, ok := liftX(mustHex32(t, bip340Vectors[1].pub))
	if !ok {
		t.Fatal("liftX rejected BIP-340 vector 1's public key")
	}
	var _ libsecp256k1.XOnlyPubKey = k.pk
}
