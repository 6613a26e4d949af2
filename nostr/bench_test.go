package nostr

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// benchEvent is a typical kind-1 note: a few tags, ~200 bytes of content.
func benchEvent(b *testing.B) (*Event, SecretKey) {
	b.Helper()
	sk, err := ParseSecretKey("b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfef")
	if err != nil {
		b.Fatal(err)
	}
	e := &Event{
		CreatedAt: 1700000000,
		Kind:      1,
		Tags: Tags{
			{"e", strings.Repeat("1", 64), "wss://relay.example.com", "root"},
			{"p", strings.Repeat("2", 64)},
			{"t", "nostr"},
		},
		Content: strings.Repeat("Hello, \"nostr\"! Ünïcödé 😀\n", 7),
	}
	if err := e.Sign(sk); err != nil {
		b.Fatal(err)
	}
	return e, sk
}

func BenchmarkParseEvent(b *testing.B) {
	e, _ := benchEvent(b)
	raw := e.AppendJSON(nil)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseEvent(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventContent reads only the content of the same event.
func BenchmarkEventContent(b *testing.B) {
	e, _ := benchEvent(b)
	raw := e.AppendJSON(nil)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if c, err := EventContent(raw); err != nil || c != e.Content {
			b.Fatal(c, err)
		}
	}
}

// BenchmarkParseEventEncodingJSON is the baseline: encoding/json into a
// plain struct, with none of ParseEvent's checks.
func BenchmarkParseEventEncodingJSON(b *testing.B) {
	e, _ := benchEvent(b)
	raw := e.AppendJSON(nil)
	type plain struct {
		ID        string     `json:"id"`
		PubKey    string     `json:"pubkey"`
		CreatedAt int64      `json:"created_at"`
		Kind      int        `json:"kind"`
		Tags      [][]string `json:"tags"`
		Content   string     `json:"content"`
		Sig       string     `json:"sig"`
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		var p plain
		if err := json.Unmarshal(raw, &p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	e, _ := benchEvent(b)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendJSON(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkComputeID(b *testing.B) {
	e, _ := benchEvent(b)
	b.ReportAllocs()
	for b.Loop() {
		if !e.CheckID() {
			b.Fatal("bad id")
		}
	}
}

// BenchmarkVerify measures Verifier.Verify; the last part of each name,
// verifier=purego or verifier=libsecp256k1, says which build ran.
func BenchmarkVerify(b *testing.B) {
	e, sk := benchEvent(b)
	b.Run("cache=hit/verifier="+VerifyBackend, func(b *testing.B) {
		v := newTestVerifier(b)
		if err := v.Verify(e); err != nil {
			b.Fatal(err)
		}
		v.cache.Wait()
		b.ReportAllocs()
		for b.Loop() {
			if err := v.Verify(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache=miss/verifier="+VerifyBackend, func(b *testing.B) {
		// A different author every time: 1000 pre-signed events from 1000
		// keys, with the cache disabled so every call lifts the key.
		v := newTestVerifier(b, WithPubKeyCacheSize(0))
		events := make([]*Event, 1000)
		for i := range events {
			k, _ := GenerateSecretKey()
			ev := &Event{CreatedAt: e.CreatedAt, Kind: e.Kind, Tags: e.Tags, Content: e.Content + strconv.Itoa(i)}
			if err := ev.Sign(k); err != nil {
				b.Fatal(err)
			}
			events[i] = ev
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := v.Verify(events[i%len(events)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	_ = sk
}

// BenchmarkVerifyCeiling is the verify ceiling: the events per second one
// core admits if a relay did nothing but check them, the id hash (the
// event serialized and hashed) and the BIP-340 signature of each, through
// a Verifier as a relay holds it. The events are 4,000 kind-1 notes of
// varied length by 200 authors, the authors-per-event ratio of buzzbench's
// corpus. authors=200 has every key in the cache, as a relay has after an
// author's first event (buzzbench's ingest); cache=off lifts the key every
// time, the ceiling for events from authors never seen before. The
// events/s metric is the figure; compare it with buzzbench's closed-loop
// ingest of the same build with the relay pinned to one core. batch=64
// is the ceiling with VerifyBatch, as a busy relay verifies.
func BenchmarkVerifyCeiling(b *testing.B) {
	events := ceilingEvents(b, 4000, 200)
	for _, c := range []struct {
		name string
		opts []VerifierOption
	}{
		{"authors=200", nil},
		{"cache=off", []VerifierOption{WithPubKeyCacheSize(0)}},
	} {
		b.Run(c.name+"/verifier="+VerifyBackend, func(b *testing.B) {
			v := newTestVerifier(b, c.opts...)
			for _, e := range events {
				if err := v.Verify(e); err != nil {
					b.Fatal(err)
				}
			}
			if v.cache != nil {
				v.cache.Wait()
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := v.Verify(events[n%len(events)]); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
	// What the relay does with events that arrive together: VerifyBatch
	// in batches of 64 (one signature at a time in the libsecp256k1 build).
	b.Run("batch=64/verifier="+VerifyBackend, func(b *testing.B) {
		v := newTestVerifier(b)
		v.VerifyBatch(events)
		v.cache.Wait()
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			at := n % (len(events) - len(events)%64)
			for _, err := range v.VerifyBatch(events[at : at+64]) {
				if err != nil {
					b.Fatal(err)
				}
			}
			n += 64
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	})
}

// ceilingEvents signs n kind-1 notes by the given number of authors, with
// contents of 20 to 600 bytes and the tags a reply carries.
func ceilingEvents(b *testing.B, n, authors int) []*Event {
	b.Helper()
	keys := make([]SecretKey, authors)
	for i := range keys {
		k, err := GenerateSecretKey()
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = k
	}
	events := make([]*Event, n)
	for i := range events {
		e := &Event{
			CreatedAt: 1700000000 + int64(i),
			Kind:      1,
			Content:   strings.Repeat("nostr relay ", 2+(i*37)%50),
		}
		if i%3 == 0 {
			e.Tags = Tags{{"e", strings.Repeat("1", 64), "", "root"}, {"p", strings.Repeat("2", 64)}}
		}
		if err := e.Sign(keys[i%authors]); err != nil {
			b.Fatal(err)
		}
		events[i] = e
	}
	return events
}

func BenchmarkSign(b *testing.B) {
	e, sk := benchEvent(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Sign(sk); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFilterMatches(b *testing.B) {
	e, _ := benchEvent(b)
	authors := make([]string, 100)
	for i := range authors {
		authors[i] = strings.Repeat(strconv.Itoa(i%10), 64)
	}
	authors[99] = e.PubKey
	cases := []struct {
		name string
		f    Filter
	}{
		{"kinds", Filter{Kinds: []int{0, 1, 6, 7}}},
		{"100authors", Filter{Authors: authors, Kinds: []int{1}}},
		{"tag", Filter{Kinds: []int{1}, Tags: map[string][]string{"t": {"bitcoin", "nostr"}}}},
		{"miss-since", Filter{Since: i64(1800000000), Kinds: []int{1}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.f.Matches(e)
			}
		})
	}
}

func BenchmarkParseFilter(b *testing.B) {
	raw := []byte(`{"kinds":[1,6,7],"authors":["` + hexA + `","` + hexB + `"],"#t":["nostr"],"since":1700000000,"limit":100}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFilter(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseClientMessage(b *testing.B) {
	e, _ := benchEvent(b)
	cases := []struct {
		name string
		msg  []byte
	}{
		{"EVENT", AppendEventEnvelope(nil, e.AppendJSON(nil))},
		{"REQ", []byte(`["REQ","sub1",{"kinds":[1,6,7],"authors":["` + hexA + `","` + hexB + `"],"#t":["nostr"],"limit":100},{"ids":["` + hexA + `"]}]`)},
		{"CLOSE", []byte(`["CLOSE","sub1"]`)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.msg)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseClientMessage(c.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendEventMessage(b *testing.B) {
	e, _ := benchEvent(b)
	raw := e.AppendJSON(nil)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendEventMessage(buf[:0], "sub1", raw)
	}
}
