package nip98

import (
	"context"
	"testing"
)

// BenchmarkVerify measures one full verification with the in-process guard;
// each iteration uses a fresh event (signed outside the timer) so the guard
// accepts it. Signature verification dominates.
func BenchmarkVerify(b *testing.B) {
	sk := newKey(b)
	g, err := NewMemoryGuard(b.N+1, WithMemoryClock(fixedClock))
	if err != nil {
		b.Fatal(err)
	}
	v := newVerifier(b, WithReplayGuard(g))
	body := []byte(`{"host":"a.example"}`)
	auths := make([]string, b.N)
	for i := range auths {
		auths[i] = baseToken(testURL, "POST").with("payload", payloadOf(body)).header(b, sk)
	}
	scope := communityScope()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := v.Verify(ctx, Request{Authorization: auths[i], Method: "POST", URL: testURL, Body: body, RequirePayload: true, Scope: scope}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseHeader measures decoding a header (base64 and event JSON).
func BenchmarkParseHeader(b *testing.B) {
	h := baseToken(testURL, "GET").header(b, newKey(b))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseHeader(h); err != nil {
			b.Fatal(err)
		}
	}
}
