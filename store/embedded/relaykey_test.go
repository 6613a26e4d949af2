package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
)

// TestRelayKeyFile: the first call stores the candidate in relay.key (mode
// 0600) beside the database; later calls, after a reopen too, return it;
// a file others may read is refused.
func TestRelayKeyFile(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := nostr.GenerateSecretKey()
	b, _ := nostr.GenerateSecretKey()
	if k, err := st.RelayKey(ctx, a); err != nil || k != a {
		t.Fatalf("first call: %v", err)
	}
	st.Close()
	path := filepath.Join(dir, embedded.RelayKeyFileName)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", path, fi, err)
	}
	st, err = embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if k, err := st.RelayKey(ctx, b); err != nil || k != a {
		t.Fatalf("after reopen: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RelayKey(ctx, b); err == nil {
		t.Fatal("a world-readable key file was accepted")
	}
}
