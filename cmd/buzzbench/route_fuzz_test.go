package main

import (
	"testing"
	"time"
)

// FuzzRoute feeds arbitrary relay frames to the client's router: whatever a
// relay sends, the tool must neither panic nor call a handler with an id
// that is not 64 bytes long.
func FuzzRoute(f *testing.F) {
	id := "aa00000000000000000000000000000000000000000000000000000000000001"
	for _, s := range []string{
		`["EVENT","q1",{"id":"` + id + `","pubkey":"p","created_at":1,"kind":1,"tags":[],"content":"","sig":"s"}]`,
		`["EVENT","q1",{"id":"short"}]`,
		`["EVENT","`,
		`["OK","` + id + `",true,""]`,
		`["OK","` + id + `",false,"auth-required: hi"]`,
		`["EOSE","q1"]`,
		`["CLOSED","q1","error: x"]`,
		`["COUNT","q1",{"count":3}]`,
		`["AUTH","challenge"]`,
		`["NOTICE","x"]`,
		`[]`, `not json`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &conn{oks: map[string]func(okResult){}, subs: map[string]*subHandler{},
			challenged: make(chan struct{}), authed: map[string]bool{}}
		check := func(got string) {
			if got != "" && len(got) != 64 {
				t.Fatalf("handler got id %q", got)
			}
		}
		c.subs["q1"] = &subHandler{
			event:  func(id string, _ time.Time) { check(id) },
			eose:   func(time.Time) {},
			closed: func(string, time.Time) {},
			count:  func(int64, time.Time) {},
		}
		c.oks[id] = func(okResult) {}
		c.route(data, time.Now())
	})
}
