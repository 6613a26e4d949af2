package nostr

import (
	"encoding/csv"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestBIP340VectorsFile verifies every row of the BIP-340 reference vectors
// (testdata/bip340-test-vectors.csv, bitcoin/bips bip-0340/test-vectors.csv
// as shipped with secp256k1-voi) whose message is 32 bytes — a Nostr id
// always is — through this build's backend, with and without the key cache,
// and with the key as a much-used key has it.
func TestBIP340VectorsFile(t *testing.T) {
	f, err := os.Open("testdata/bip340-test-vectors.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 20 {
		t.Fatalf("%d rows, want the header and vectors 0-18", len(rows))
	}
	checked := 0
	for _, size := range []int{0, 100} {
		v := newTestVerifier(t, WithPubKeyCacheSize(size))
		for _, r := range rows[1:] {
			index, pub, msgHex, sigHex, want := r[0], strings.ToLower(r[2]), r[4], r[5], r[6] == "TRUE"
			if len(msgHex) != 64 {
				continue // 0-, 1-, 17- and 100-byte messages (vectors 15-18)
			}
			msg := mustHex32(t, msgHex)
			sigb, err := hex.DecodeString(sigHex)
			if err != nil || len(sigb) != 64 {
				t.Fatalf("vector %s: bad signature column", index)
			}
			// The second round from the cache, if any; the third with the
			// key as a much-used key has it (heatKey).
			for round := range 3 {
				got := false
				if key, ok := v.lookup(pub); ok {
					if round == 2 {
						heatKey(key)
					}
					got = v.verifySig(key, msg, (*[64]byte)(sigb))
				}
				if got != want {
					t.Errorf("backend %s, vector %s (%s): verify = %v, want %v", VerifyBackend, index, r[7], got, want)
				}
				if size > 0 {
					v.cache.Wait()
				}
			}
			checked++
		}
	}
	if checked != 2*15 {
		t.Fatalf("checked %d vectors, want 15 twice", checked/2)
	}
}
