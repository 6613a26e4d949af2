package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
)

func openStore(t testing.TB, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(context.Background(), url, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func signed(t testing.TB, sk nostr.SecretKey, kind int, createdAt int64, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: createdAt, Content: content, Tags: tags}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if err := ev.Sign(sk); err != nil {
		t.Fatalf("sign: %v", err)
	}
	return ev
}

func collect(t testing.TB, s store.EventStore, c tenant.CommunityID, f nostr.Filter) []store.Record {
	t.Helper()
	var out []store.Record
	for r, err := range s.Query(context.Background(), c, f) {
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		out = append(out, r)
	}
	return out
}

func TestSmokeSaveQuery(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	c, created, err := s.EnsureCommunity(ctx, "a.example")
	if err != nil || !created {
		t.Fatalf("ensure: %v %v", created, err)
	}
	sk, _ := nostr.GenerateSecretKey()
	now := time.Now().Unix()
	ev := signed(t, sk, 1, now, "hello \"world\" \u00e9", nostr.Tag{"t", "go"})
	if err := s.Save(ctx, c, ev); err != nil {
		t.Fatalf("save: %v", err)
	}
	if err := s.Save(ctx, c, ev); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("second save: %v", err)
	}
	got := collect(t, s, c, nostr.Filter{Tags: map[string][]string{"t": {"go"}}, Limit: 10, LimitSet: true})
	if len(got) != 1 || string(got[0].Raw) != string(ev.AppendJSON(nil)) || got[0].ID != ev.ID {
		t.Fatalf("query: %+v", got)
	}
	n, err := s.Count(ctx, c, []nostr.Filter{{Authors: []string{ev.PubKey}}})
	if err != nil || n != 1 {
		t.Fatalf("count: %d %v", n, err)
	}
}
