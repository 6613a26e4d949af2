package audit_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/tenant"
)

var community = tenant.FromUUID([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})

const actor = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"

func chain(t *testing.T, recs ...audit.Record) []audit.Entry {
	t.Helper()
	var (
		out  []audit.Entry
		seq  int64
		prev [32]byte
	)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, r := range recs {
		p, err := r.Prepare(now)
		if err != nil {
			t.Fatal(err)
		}
		e := audit.Link(community, seq, prev, p)
		out = append(out, e)
		seq, prev = e.Seq, e.Hash
	}
	return out
}

// TestHashVersion1 pins the version 1 encoding: a change to it would make
// every stored chain fail verification. The expected hashes were computed
// independently (a few lines of Python following the layout documented on
// Entry.ComputeHash), not by this package.
func TestHashVersion1(t *testing.T) {
	es := chain(t,
		audit.Record{Action: audit.ChannelCreated, Actor: actor, Object: "obj", Detail: map[string]any{"b": 1, "a": "x"}},
		audit.Record{Action: audit.RateLimited},
	)
	got := []string{hex.EncodeToString(es[0].Hash[:]), hex.EncodeToString(es[1].Hash[:])}
	want := []string{
		"9f491e8f2264c0720a87b477b2525609e74d82b7c62f59856b775f49576cbdeb",
		"3e662d1f66efe7c56ede118b88db7664d639643253eb590e7522ed2afa4a2c18",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d hash %s, want %s", i+1, got[i], want[i])
		}
	}
}

// TestFieldBoundaries: moving bytes between object and detail (Buzz's
// ambiguity, issue #4173) or between action and object changes the hash.
func TestFieldBoundaries(t *testing.T) {
	a := chain(t, audit.Record{Action: "ab", Object: "c"})[0]
	b := chain(t, audit.Record{Action: "a", Object: "bc"})[0]
	c := chain(t, audit.Record{Action: "a", Object: ""})[0]
	d := chain(t, audit.Record{Action: "a", Object: "{}"})[0]
	if a.Hash == b.Hash || c.Hash == d.Hash {
		t.Fatal("hashes collide across a field boundary")
	}
	withActor := chain(t, audit.Record{Action: "a", Actor: actor})[0]
	without := chain(t, audit.Record{Action: "a"})[0]
	if withActor.Hash == without.Hash {
		t.Fatal("actor presence not hashed")
	}
}

func TestVerifier(t *testing.T) {
	es := chain(t, audit.Record{Action: "a"}, audit.Record{Action: "b"}, audit.Record{Action: "c"}, audit.Record{Action: "d"})
	check := func(name string, es []audit.Entry, want int64) {
		t.Helper()
		var v audit.Verifier
		for _, e := range es {
			if !v.Add(e) {
				break
			}
		}
		if got, why := v.Broken(); got != want {
			t.Errorf("%s: broken at %d (%s), want %d", name, got, why, want)
		}
	}
	check("intact", es, 0)

	changed := append([]audit.Entry(nil), es...)
	changed[2].Detail = []byte(`{"x":1}`)
	check("changed detail", changed, 3)

	check("missing entry", append(append([]audit.Entry(nil), es[:1]...), es[2:]...), 2)

	swapped := append([]audit.Entry(nil), es...)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	swapped[1].Seq, swapped[2].Seq = 2, 3
	check("reordered", swapped, 2)

	rehashed := append([]audit.Entry(nil), es...)
	rehashed[1].Action = "forged"
	rehashed[1].Hash, _ = rehashed[1].ComputeHash()
	check("rehashed entry", rehashed, 3) // its successor's prev_hash no longer matches

	var v audit.Verifier
	for _, e := range es {
		v.Add(e)
	}
	if v.Verified() != 4 || v.Head() != es[3].Hash {
		t.Errorf("verified %d, head %x", v.Verified(), v.Head())
	}
}

func TestPrepareRejects(t *testing.T) {
	long := make([]byte, audit.MaxObjectLen+1)
	for i := range long {
		long[i] = 'x'
	}
	for _, r := range []audit.Record{
		{},
		{Action: "a", Actor: actor[:63]},
		{Action: "a", Actor: "79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798"},
		{Action: "a", Object: string(long)},
		{Action: "a", Object: "\xff"},
		{Action: "a", Detail: "string"},
		{Action: "a", Detail: json.RawMessage(`{"a":1} {}`)},
		{Action: "a", Detail: json.RawMessage(`{"a":1e400}`)},
	} {
		if _, err := r.Prepare(time.Now()); !errors.Is(err, audit.ErrInvalidRecord) {
			t.Errorf("Prepare(%+v) = %v, want ErrInvalidRecord", r, err)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	for in, want := range map[string]string{
		`null`:                        `{}`,
		`{}`:                          `{}`,
		` { "b" : 2, "a" : [1, 2] } `: `{"a":[1,2],"b":2}`,
		`{"n": [1.50, 1e2, -0, 0.1, 1e21, 123456789012345678901]}`: `{"n":[1.5,100,0,0.1,1e+21,1.2345678901234568e+20]}`,
		`{"s": "<&>\u0000é\u2028"}`:                                "{\"s\":\"<&>\uFFFDé\\u2028\"}",
		`{"k": {"z": 1, "a": {"y": true, "b": null}}}`:             `{"k":{"a":{"b":null,"y":true},"z":1}}`,
	} {
		got, err := audit.CanonicalJSON(json.RawMessage(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
		again, err := audit.CanonicalJSON(json.RawMessage(got))
		if err != nil || string(again) != string(got) {
			t.Errorf("%s: not idempotent: %s", in, again)
		}
	}
	if got, _ := audit.CanonicalJSON(nil); string(got) != "{}" {
		t.Errorf("nil: %s", got)
	}
}

// FuzzCanonicalJSON: canonicalization never panics, and its output is a
// fixed point that decodes to the same JSON value.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5,"x"]}`, `{"b":{"c":null},"a":true}`, `{"n":1e400}`, `[1]`, `{"s":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := audit.CanonicalJSON(json.RawMessage(in))
		if err != nil {
			return
		}
		again, err := audit.CanonicalJSON(json.RawMessage(out))
		if err != nil || string(again) != string(out) {
			t.Fatalf("not a fixed point: %s -> %s (%v)", out, again, err)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("output is not a JSON object: %s", out)
		}
	})
}
