package nip98

import (
	"encoding/base64"
	"errors"
	"reflect"
	"testing"
)

// A fixed, structurally valid kind-27235 event (u https://chat.example/x,
// method GET; ParseHeader does not check id or signature), so that seeds do
// not depend on a random key.
const seedEvent = `{"id":"0ba3f6d4a1a5e16bdad72b0c0ad8dcbc2a6fe4ee7e0a2a8c0da39b5ffb25e66f","pubkey":"79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798","created_at":1750000000,"kind":27235,"tags":[["u","https://chat.example/x"],["method","GET"]],"content":"","sig":"00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"}`

func FuzzParseHeader(f *testing.F) {
	b := base64.StdEncoding.EncodeToString([]byte(seedEvent))
	for _, s := range []string{
		"", " ", "Nostr", "Nostr ", "Nostr =", "Nostr A", "Nostr AA==", "Bearer abc",
		"Nostr " + b,
		"nostr  " + base64.RawURLEncoding.EncodeToString([]byte(seedEvent)),
		"Nostr " + base64.RawStdEncoding.EncodeToString([]byte(seedEvent)),
		"Nostr " + base64.StdEncoding.EncodeToString([]byte(`{}`)),
		"Nostr " + base64.StdEncoding.EncodeToString([]byte(`[]`)),
		"Nostr " + b[:40] + "\n" + b[40:],
		"Nostr " + b + " trailing",
		"\tNostr " + b + "\t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ev, err := ParseHeader(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			switch e.Reason {
			case ErrMissing, ErrMalformed, ErrTooLarge:
			default:
				t.Fatalf("unexpected reason %v", e.Reason)
			}
			if err.Error() != e.Reason.Error() {
				t.Fatalf("error text %q is not the reason's", err.Error())
			}
			return
		}
		if len(s) > DefaultMaxHeaderSize {
			t.Fatalf("accepted a %d-byte header", len(s))
		}
		// Re-encoding the parsed event yields the same event.
		again, err := ParseHeader("Nostr " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil)))
		if err != nil && len(ev.AppendJSON(nil))*4/3+10 < DefaultMaxHeaderSize {
			t.Fatalf("re-encoded event refused: %v", err)
		}
		if err == nil && !reflect.DeepEqual(ev, again) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", ev, again)
		}
	})
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{
		"https://chat.example/x", "HTTP://127.0.0.1:80/a/?q", "http://[::1]:3000//", "https://a.example./b%2Fc?d#e",
		"https://u@h/", "https://h:0/", "https:h", "ftp://h/", "https://[fe80::1%25eth0]/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := NormalizeURL(s)
		if err != nil {
			return
		}
		again, err := NormalizeURL(n)
		if err != nil || again != n {
			t.Fatalf("NormalizeURL(%q) = %q, which normalizes to %q, %v", s, n, again, err)
		}
	})
}
