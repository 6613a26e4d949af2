package postgres

import (
	"context"
	"errors"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/testenv"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// internalStore opens a store on a fresh, migrated database. (pgtest cannot
// be used here: it imports this package.)
func internalStore(t *testing.T, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), internalDatabase(t), append([]Option{WithAutoMigrate(true)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// internalDatabase creates an empty database, dropped when the test ends,
// and returns its URL (pgtest's, which imports this package, cannot serve
// internal tests).
func internalDatabase(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	admin := os.Getenv("BUZZ_TEST_POSTGRES")
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		testenv.Unavailable(t, "PostgreSQL", err)
	}
	defer conn.Close(ctx)
	name := "buzz_test_internal_" + tenant.NewCommunityID().String()[:8]
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	return u.String()
}

func signedEvent(t *testing.T, sk nostr.SecretKey, kind int, at int64, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: at, Content: content, Tags: nostr.Tags(tags)}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestGroupCommitMatchesSequential is a differential test of the batch
// path: one batch mixing plain events, repeats, replaceable and addressable
// versions and a deletion request (whose target arrives again afterwards)
// must give every event the verdict, and leave the state, that saving the
// same events one by one gives.
func TestGroupCommitMatchesSequential(t *testing.T) {
	ctx := context.Background()
	s := internalStore(t)
	batched, _, err := s.EnsureCommunity(ctx, "batched.example")
	if err != nil {
		t.Fatal(err)
	}
	sequential, _, err := s.EnsureCommunity(ctx, "sequential.example")
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := nostr.GenerateSecretKey()
	other, _ := nostr.GenerateSecretKey()
	pk := sk.PublicKey()
	now := time.Now().Unix() - 1000
	e1 := signedEvent(t, sk, 1, now, "one", nostr.Tag{"t", "x"}, nostr.Tag{"p", other.PublicKey()})
	e2 := signedEvent(t, sk, 1, now+1, "two", nostr.Tag{"t", "x"})
	e3 := signedEvent(t, other, 1, now+2, "three")
	r1 := signedEvent(t, sk, 10002, now+100, "r1")
	r0 := signedEvent(t, sk, 10002, now+50, "r0")
	r2 := signedEvent(t, sk, 10002, now+200, "r2")
	a1 := signedEvent(t, sk, 30023, now+10, "a1", nostr.Tag{"d", "x"})
	del := signedEvent(t, sk, 5, now+20, "", nostr.Tag{"e", e2.ID}, nostr.Tag{"e", e3.ID}, nostr.Tag{"a", "30023:" + pk + ":x"})
	a2 := signedEvent(t, sk, 30023, now+30, "a2", nostr.Tag{"d", "x"})
	inChannel := signedEvent(t, sk, 9, now+3, "in a channel", nostr.Tag{"h", "0b7c2a4e-8d6f-4c1a-9e3b-5f2d7a1c9e40"})
	order := []*nostr.Event{e1, e1, e2, r1, r0, inChannel, r2, a1, e3, del, e2, a1, a2, r1, e1, inChannel}

	var batch []*saveReq
	for _, ev := range order {
		a, err := encodeEvent(batched, ev)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, &saveReq{ctx: ctx, args: a, done: make(chan error, 1)})
	}
	codes, err := s.saveMany(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []error
	for i, ev := range order {
		a, _ := encodeEvent(sequential, ev)
		want = append(want, s.saveOne(ctx, a))
		got = append(got, saveResult(codes[i]))
	}
	for i := range order {
		if !errors.Is(got[i], want[i]) && !(got[i] == nil && want[i] == nil) {
			t.Errorf("event %d (kind %d): batch %v, one by one %v", i, order[i].Kind, got[i], want[i])
		}
	}
	// Sanity of the sequential reference itself.
	if want[1] != store.ErrDuplicate || want[4] != store.ErrSuperseded || want[10] != store.ErrDeleted || want[11] != store.ErrDeleted || want[15] != store.ErrDuplicate {
		t.Errorf("unexpected reference verdicts: %v", want)
	}
	ids := func(c tenant.CommunityID, sc channel.Scope) []string {
		var out []string
		for r, err := range s.QueryScoped(ctx, c, nostr.Filter{}, sc) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r.ID)
		}
		return out
	}
	for _, sc := range []channel.Scope{channel.AllChannels(), channel.ScopeOf()} {
		if b, q := ids(batched, sc), ids(sequential, sc); !slices.Equal(b, q) {
			t.Errorf("live events differ (scope all=%v):\nbatch      %v\none by one %v", sc.All(), b, q)
		}
	}
	if all, wide := ids(batched, channel.AllChannels()), ids(batched, channel.ScopeOf()); !slices.Contains(all, inChannel.ID) || slices.Contains(wide, inChannel.ID) {
		t.Errorf("the channel event was not stored in its channel")
	}
}

// TestGroupCommitIsolatesAFailingEvent: an event the database rejects makes
// its batch fall back to one transaction per event, so only that event
// fails.
func TestGroupCommitIsolatesAFailingEvent(t *testing.T) {
	ctx := context.Background()
	s := internalStore(t)
	c, _, err := s.EnsureCommunity(ctx, "a.example")
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := nostr.GenerateSecretKey()
	now := time.Now().Unix()
	var batch []*saveReq
	var evs []*nostr.Event
	for i := range 5 {
		ev := signedEvent(t, sk, 1, now+int64(i), "x")
		a, err := encodeEvent(c, ev)
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			a.sig = a.sig[:10] // violates the sig length CHECK
		}
		evs = append(evs, ev)
		batch = append(batch, &saveReq{ctx: ctx, args: a, done: make(chan error, 1)})
	}
	s.commitBatch(slices.Clone(batch))
	for i, r := range batch {
		err := <-r.done
		if (i == 2) != (err != nil) {
			t.Errorf("event %d: %v", i, err)
		}
	}
	n, err := s.Count(ctx, c, []nostr.Filter{{}})
	if err != nil || n != 4 {
		t.Fatalf("count = %d, %v; want the 4 good events", n, err)
	}
}

// TestGroupCommitBatchIsAtomic: the batch pipeline is one transaction, so a
// statement failing after an earlier one succeeded leaves nothing of the
// batch behind.
func TestGroupCommitBatchIsAtomic(t *testing.T) {
	ctx := context.Background()
	s := internalStore(t)
	c, _, err := s.EnsureCommunity(ctx, "a.example")
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := nostr.GenerateSecretKey()
	now := time.Now().Unix()
	var batch []*saveReq
	for i, kind := range []int{1, 1, 0} { // two plain events (set-based), then a replaceable one
		a, err := encodeEvent(c, signedEvent(t, sk, kind, now+int64(i), "x"))
		if err != nil {
			t.Fatal(err)
		}
		if kind == 0 {
			a.sig = a.sig[:10] // violates the sig length CHECK in buzz_save_event
		}
		batch = append(batch, &saveReq{ctx: ctx, args: a, done: make(chan error, 1)})
	}
	if _, err := s.saveMany(ctx, batch); err == nil {
		t.Fatal("saveMany succeeded with an invalid event")
	}
	n, err := s.Count(ctx, c, []nostr.Filter{{}})
	if err != nil || n != 0 {
		t.Fatalf("count = %d, %v; want nothing committed", n, err)
	}
}
