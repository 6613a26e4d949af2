package nostr

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVerifyBackendFollowsBuild checks that the backend compiled in is the
// one the build settings call for, read from the binary's build information
// rather than from build tags: btcec/v2 with the btcec tag, the bundled
// libsecp256k1 when cgo is on and the purego tag is not set, secp256k1-voi
// otherwise.
func TestVerifyBackendFollowsBuild(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	cgo, tags := false, map[string]bool{}
	for _, s := range bi.Settings {
		switch s.Key {
		case "CGO_ENABLED":
			cgo = s.Value == "1"
		case "-tags":
			for _, tag := range strings.Split(s.Value, ",") {
				tags[tag] = true
			}
		}
	}
	want := "secp256k1-voi"
	switch {
	case tags["btcec"]:
		want = "btcec"
	case cgo && !tags["purego"]:
		want = "libsecp256k1"
	}
	if VerifyBackend != want {
		t.Fatalf("VerifyBackend = %q, want %q (CGO_ENABLED=%v, tags %v)", VerifyBackend, want, cgo, tags)
	}
}
