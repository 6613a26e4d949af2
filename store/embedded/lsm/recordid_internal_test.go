package lsm

import (
	"encoding/hex"
	"testing"
	"unsafe"

	"github.com/buzzrelay/buzz/nostr"
)

// TestRecordIDSharesRaw: the id of an event whose raw JSON is AppendJSON's
// is the hex at its start, sharing raw's bytes; a raw of another shape, or
// beginning with another id, gets a correct copy.
func TestRecordIDSharesRaw(t *testing.T) {
	ev := nostr.Event{
		ID:        "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0",
		PubKey:    "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798",
		CreatedAt: 1_700_000_000,
		Kind:      1,
		Content:   "hello",
		Sig:       hex.EncodeToString(make([]byte, 64)),
	}
	var id [32]byte
	if _, err := hex.Decode(id[:], []byte(ev.ID)); err != nil {
		t.Fatal(err)
	}
	raw := ev.AppendJSON(nil)

	got := recordID(&id, raw)
	if got != ev.ID {
		t.Fatalf("recordID = %q, want %q", got, ev.ID)
	}
	if p := unsafe.StringData(got); p != &raw[7] {
		t.Fatal("recordID copied an id it could share with raw")
	}

	other := id
	other[31] ^= 1
	if got := recordID(&other, raw); got != hex.EncodeToString(other[:]) {
		t.Fatalf("recordID with another id = %q, want %q", got, hex.EncodeToString(other[:]))
	}
	upper := []byte(string(raw))
	copy(upper[7:], "0F1E")
	if got := recordID(&id, upper); got != ev.ID || unsafe.StringData(got) == &upper[7] {
		t.Fatalf("recordID over an upper-case id = %q (shared: %v), want a lower-case copy", got, unsafe.StringData(got) == &upper[7])
	}
	for _, short := range [][]byte{nil, raw[:40], []byte(`{"pubkey":"` + ev.PubKey + `"}`)} {
		if got := recordID(&id, short); got != ev.ID {
			t.Fatalf("recordID over %q = %q, want %q", short, got, ev.ID)
		}
	}
}
