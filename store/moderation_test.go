package store_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/store"
)

func TestReportKeys(t *testing.T) {
	key := func(c string) string { return strings.Repeat(c, 64) }
	valid := func() store.Report {
		return store.Report{ID: key("1"), Reporter: key("2"), TargetPubKey: key("3"), Type: "spam", Raw: []byte(`{}`)}
	}
	r := valid()
	k, err := r.Keys()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k.ID, bytes.Repeat([]byte{0x11}, 32)) || !bytes.Equal(k.Reporter, bytes.Repeat([]byte{0x22}, 32)) ||
		!bytes.Equal(k.TargetPubKey, bytes.Repeat([]byte{0x33}, 32)) || k.TargetEvent != nil {
		t.Fatalf("Keys = %x", k)
	}
	r.TargetEvent = key("4")
	if k, err := r.Keys(); err != nil || !bytes.Equal(k.TargetEvent, bytes.Repeat([]byte{0x44}, 32)) {
		t.Fatalf("with a target event: %x, %v", k.TargetEvent, err)
	}
	for name, spoil := range map[string]func(*store.Report){
		"id short":              func(r *store.Report) { r.ID = r.ID[1:] },
		"reporter upper-case":   func(r *store.Report) { r.Reporter = strings.ToUpper(key("a")) },
		"target pubkey empty":   func(r *store.Report) { r.TargetPubKey = "" },
		"target event not hex":  func(r *store.Report) { r.TargetEvent = key("z") },
		"no raw event":          func(r *store.Report) { r.Raw = nil },
		"no report type":        func(r *store.Report) { r.Type = "" },
		"target event too long": func(r *store.Report) { r.TargetEvent = key("4") + "44" },
	} {
		r := valid()
		spoil(&r)
		if k, err := r.Keys(); !errors.Is(err, store.ErrInvalidModeration) || k.ID != nil {
			t.Errorf("%s: Keys = %x, %v; want ErrInvalidModeration and no keys", name, k, err)
		}
	}
}
