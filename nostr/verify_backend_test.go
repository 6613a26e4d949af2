package nostr

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVerifyBackendFollowsBuild checks that the backend compiled in is the
// one the build settings call for, read from the binary's build information
// rather than from build tags: the system libsecp256k1 with the
// libsecp256k1 tag, the pure-Go verifier otherwise.
func TestVerifyBackendFollowsBuild(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	tags := map[string]bool{}
	for _, s := range bi.Settings {
		if s.Key == "-tags" {
			for _, tag := range strings.Split(s.Value, ",") {
				tags[tag] = true
			}
		}
	}
	want := "purego"
	if tags["libsecp256k1"] {
		want = "libsecp256k1"
	}
	if VerifyBackend != want {
		t.Fatalf("VerifyBackend = %q, want %q (tags %v)", VerifyBackend, want, tags)
	}
}
