package nip98

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// testNow is the fixed time every test verifier sees.
var testNow = time.Unix(1_750_000_000, 0)

func fixedClock() time.Time { return testNow }

func newKey(tb testing.TB) nostr.SecretKey {
	tb.Helper()
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		tb.Fatal(err)
	}
	return sk
}

// token describes one NIP-98 event before signing.
type token struct {
	kind      int
	createdAt int64
	tags      nostr.Tags
}

func baseToken(url, method string) token {
	return token{
		kind:      nostr.KindHTTPAuth,
		createdAt: testNow.Unix(),
		tags:      nostr.Tags{{"u", url}, {"method", method}, {"nonce", randHex(8)}},
	}
}

func (t token) with(tag ...string) token {
	t.tags = append(append(nostr.Tags{}, t.tags...), nostr.Tag(tag))
	return t
}

func (t token) without(name string) token {
	var out nostr.Tags
	for _, tg := range t.tags {
		if tg[0] != name {
			out = append(out, tg)
		}
	}
	t.tags = out
	return t
}

func (t token) event(tb testing.TB, sk nostr.SecretKey) *nostr.Event {
	tb.Helper()
	ev := &nostr.Event{CreatedAt: t.createdAt, Kind: t.kind, Tags: t.tags}
	if err := ev.Sign(sk); err != nil {
		tb.Fatal(err)
	}
	return ev
}

func header(ev *nostr.Event) string {
	return "Nostr " + base64.StdEncoding.EncodeToString(ev.AppendJSON(nil))
}

func (t token) header(tb testing.TB, sk nostr.SecretKey) string {
	tb.Helper()
	return header(t.event(tb, sk))
}

func payloadOf(body []byte) string {
	s := sha256.Sum256(body)
	return hex.EncodeToString(s[:])
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newVerifier(tb testing.TB, opts ...Option) *Verifier {
	tb.Helper()
	v, err := NewVerifier(append([]Option{WithClock(fixedClock)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func communityScope() ReplayScope { return CommunityScope(tenant.NewCommunityID()) }
