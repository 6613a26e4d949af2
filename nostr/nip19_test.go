package nostr

import (
	"encoding/hex"
	"strings"
	"testing"
)

// Vectors from NIP-19.
const (
	vecNpub   = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
	vecPubHex = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"
	vecNsec   = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"
	vecSecHex = "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa"
)

func TestNIP19Vectors(t *testing.T) {
	if got, err := EncodeNpub(vecPubHex); err != nil || got != vecNpub {
		t.Fatalf("EncodeNpub = %q, %v", got, err)
	}
	sk, err := ParseSecretKey(vecSecHex)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := EncodeNsec(sk); err != nil || got != vecNsec {
		t.Fatalf("EncodeNsec = %q, %v", got, err)
	}
	for _, in := range []string{vecNpub, vecPubHex, strings.ToUpper(vecPubHex), " " + vecNpub + " "} {
		if got, err := ParsePubKey(in); err != nil || got != vecPubHex {
			t.Fatalf("ParsePubKey(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{vecNsec, vecSecHex} {
		if got, err := ParseSecretKeyAny(in); err != nil || got != sk {
			t.Fatalf("ParseSecretKeyAny(%q): %v", in, err)
		}
	}
	for _, bad := range []string{"", vecNpub[:len(vecNpub)-1] + "q", vecNsec, "npub1", vecPubHex[:62], "zz" + vecPubHex[2:]} {
		if _, err := ParsePubKey(bad); err == nil {
			t.Fatalf("ParsePubKey(%q) accepted", bad)
		}
	}
	if _, err := ParseSecretKeyAny(vecNpub); err == nil {
		t.Fatal("an npub was accepted as a secret key")
	}
}

// FuzzParsePubKey: whatever ParsePubKey accepts is 64 lowercase hex whose
// npub parses back to it.
func FuzzParsePubKey(f *testing.F) {
	for _, s := range []string{vecNpub, vecPubHex, vecNsec, "npub1qqqq", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParsePubKey(s)
		if err != nil {
			return
		}
		if raw, err := hex.DecodeString(got); err != nil || len(raw) != 32 || strings.ToLower(got) != got {
			t.Fatalf("ParsePubKey(%q) = %q", s, got)
		}
		n, err := EncodeNpub(got)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := ParsePubKey(n); err != nil || back != got {
			t.Fatalf("round trip of %q: %q, %v", got, back, err)
		}
	})
}
