package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

func TestPresence(t *testing.T) {
	needRedis(t)
	t.Parallel()
	ns := randomName("t")
	rc := rawClient(t)
	a := newPod(t, ns)
	ctx := context.Background()
	c1, c2 := tenant.NewCommunityID(), tenant.NewCommunityID()
	pk, pk2 := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	key := ns + ":" + c1.String() + ":presence:" + pk

	if err := a.SetPresence(ctx, c1, pk, StatusOnline, 0); err != nil {
		t.Fatal(err)
	}
	if v, _ := rc.Do(ctx, rc.B().Get().Key(key).Build()).ToString(); v != StatusOnline {
		t.Fatalf("presence = %q", v)
	}
	if ttl, _ := rc.Do(ctx, rc.B().Ttl().Key(key).Build()).AsInt64(); ttl <= 0 || ttl > 180 {
		t.Fatalf("presence TTL = %d, want (0, 180]", ttl)
	}
	if err := a.SetPresence(ctx, c1, pk2, StatusAway, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	got, err := a.Presence(ctx, c1, []string{pk, pk2, strings.Repeat("ef", 32)})
	if err != nil || len(got) != 2 || got[pk] != StatusOnline || got[pk2] != StatusAway {
		t.Fatalf("Presence = %v, %v", got, err)
	}
	if got, _ := a.Presence(ctx, c2, []string{pk}); len(got) != 0 {
		t.Fatalf("presence leaked into another community: %v", got)
	}
	if err := a.SetPresence(ctx, c1, pk2, StatusOffline, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.ClearPresence(ctx, c1, pk); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Presence(ctx, c1, []string{pk, pk2}); len(got) != 0 {
		t.Fatalf("presence not cleared: %v", got)
	}
	for _, bad := range []func() error{
		func() error { return a.SetPresence(ctx, tenant.CommunityID{}, pk, "online", 0) },
		func() error { return a.SetPresence(ctx, c1, "x:*", "online", 0) },
		func() error { return a.SetPresence(ctx, c1, strings.ToUpper(pk), "online", 0) },
		func() error { return a.SetPresence(ctx, c1, pk, "", 0) },
		func() error { return a.SetPresence(ctx, c1, pk, strings.Repeat("x", 65), 0) },
		func() error { return a.ClearPresence(ctx, c1, "nope") },
	} {
		if bad() == nil {
			t.Fatal("invalid presence call accepted")
		}
	}
}

func TestOptionsValidated(t *testing.T) {
	t.Parallel()
	bad := []Option{
		nil,
		WithNamespace(""),
		WithNamespace("a:b"),
		WithNamespace(strings.Repeat("a", 65)),
		WithEchoCache(0, time.Minute),
		WithEchoCache(10, time.Millisecond),
		WithUnsubscribeDelay(-1),
		WithUnsubscribeDelay(2 * time.Minute),
		WithReconnectBackoff(0, time.Second),
		WithReconnectBackoff(2*time.Second, time.Second),
		WithPublishTimeout(0),
		WithSubscribeWait(-1),
		WithClientName("has space"),
		WithClientName(""),
		WithLogger(nil),
		WithTopicFunc(nil),
	}
	for i, o := range bad {
		if _, err := New(context.Background(), "redis://127.0.0.1:1", o); err == nil || strings.HasPrefix(err.Error(), "pubsub/redis: connect") {
			t.Fatalf("option %d: New = %v, want a validation error before connecting", i, err)
		}
	}
	if _, err := New(context.Background(), "http://x"); err == nil {
		t.Fatal("bad URL scheme accepted")
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	c := tenant.NewCommunityID()
	ev := newEvent(t, 1, "", `he said "hi"`)
	raw := ev.AppendJSON(nil)
	env, err := parseEnvelope(string(appendEnvelope(nil, c, ev.ID, raw)))
	if err != nil {
		t.Fatal(err)
	}
	if env.community != c.String() || env.id != ev.ID || env.raw != string(raw) {
		t.Fatalf("round trip mismatch: %+v", env)
	}
}

func FuzzParseEnvelope(f *testing.F) {
	c := tenant.FromUUID([16]byte{1, 2, 3})
	id := strings.Repeat("0a", 32)
	f.Add(string(appendEnvelope(nil, c, id, []byte(`{}`))))
	f.Add(`{"v":1,"c":"`)
	f.Add("")
	f.Add(string(appendEnvelope(nil, c, strings.Repeat("0A", 32), []byte(`x`))))
	f.Fuzz(func(t *testing.T, s string) {
		env, err := parseEnvelope(s)
		if err != nil {
			return
		}
		if len(env.community) != uuidTextLen || len(env.id) != eventIDLen || env.raw == "" {
			t.Fatalf("accepted envelope with bad parts: %q", s)
		}
		// Re-encoding the parts yields the input (the layout is fixed).
		re := envPrefix + env.community + envAfterComm + env.id + envAfterID + env.raw + envSuffix
		if re != s {
			t.Fatalf("parts do not reassemble the input")
		}
	})
}
