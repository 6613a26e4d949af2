package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

// TestRelayKeyFirstWriterWins: processes starting at once on one database
// all get the one key that was stored first; later calls get it too.
func TestRelayKeyFirstWriterWins(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	const n = 8
	got := make([]nostr.SecretKey, n)
	var wg sync.WaitGroup
	for i := range n {
		st, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		cand, err := nostr.GenerateSecretKey()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := st.RelayKey(ctx, cand)
			if err != nil {
				t.Error(err)
			}
			got[i] = k
		}()
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] || got[i] == (nostr.SecretKey{}) {
			t.Fatalf("process %d got another key", i)
		}
	}
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	other, _ := nostr.GenerateSecretKey()
	if k, err := st.RelayKey(ctx, other); err != nil || k != got[0] {
		t.Fatalf("later call: %v", err)
	}
}
