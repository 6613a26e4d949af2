package workflow_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

// forBackends runs fn on the embedded store as buzzd opens it by default
// (events in the LSM engine) and on PostgreSQL.
func forBackends(t *testing.T, fn func(t *testing.T, open func(t *testing.T) workflowtest.Backend)) {
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		var (
			once sync.Once
			s    *embedded.Store
		)
		fn(t, func(t *testing.T) workflowtest.Backend {
			once.Do(func() {
				var err error
				s, err = embedded.Open(context.Background(), dir)
				if err != nil {
					t.Fatal(err)
				}
			})
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		fn(t, func(t *testing.T) workflowtest.Backend {
			s, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
}

// recorder is the relay side of a test: it signs with one key, stores
// published events (deduplicated by id, as a relay's store does) and, like
// a relay, feeds what it stores back to the engine's event source.
type recorder struct {
	sk   nostr.SecretKey
	feed *workflow.Feed

	mu        sync.Mutex
	events    []*nostr.Event
	publishes map[string]int
	onPublish func(*nostr.Event) // called for each newly stored event
}

func newRecorder(t testing.TB, feed *workflow.Feed) *recorder {
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{sk: sk, feed: feed, publishes: map[string]int{}}
}

func (r *recorder) Sign(_ context.Context, _ tenant.CommunityID, ev *nostr.Event) error {
	return ev.Sign(r.sk)
}

func (r *recorder) Publish(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	if err := ctx.Err(); err != nil {
		return err // as a relay's store would
	}
	r.mu.Lock()
	r.publishes[ev.ID]++
	first := r.publishes[ev.ID] == 1
	if first {
		r.events = append(r.events, ev)
	}
	hook := r.onPublish
	r.mu.Unlock()
	if first && hook != nil {
		hook(ev)
	}
	if first && r.feed != nil {
		return r.feed.Publish(ctx, c, ev)
	}
	return nil
}

// of returns the stored events of a kind.
func (r *recorder) of(kind int) []*nostr.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*nostr.Event
	for _, ev := range r.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// statuses returns the status events of run as "kind:step" strings.
func (r *recorder) statuses(run workflow.ID) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		if ev.Kind < nostr.KindRunTriggered || ev.Kind > nostr.KindRunCancelled {
			continue
		}
		var body struct {
			RunID  string `json:"run_id"`
			Step   string `json:"step_id"`
			Status string `json:"status"`
		}
		_ = json.Unmarshal([]byte(ev.Content), &body)
		if body.RunID == run.String() {
			out = append(out, body.Status+":"+body.Step)
		}
	}
	return out
}

// members is a test Authority.
type members struct {
	mu sync.Mutex
	m  map[string]channel.Role // channel/pubkey → role
}

func newMembers() *members { return &members{m: map[string]channel.Role{}} }

func (m *members) set(ch channel.ID, pk string, role channel.Role) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if role == "" {
		delete(m.m, ch.String()+pk)
		return
	}
	m.m[ch.String()+pk] = role
}

func (m *members) ChannelRole(_ context.Context, _ tenant.CommunityID, ch channel.ID, pk string) (channel.Role, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.m[ch.String()+pk]
	return r, ok, nil
}

// env is one engine over a backend.
type env struct {
	t      testing.TB
	b      workflowtest.Backend
	e      *workflow.Engine
	feed   *workflow.Feed
	pub    *recorder
	auth   *members
	c      tenant.CommunityID
	ch     channel.ID
	owner  string
	user   nostr.SecretKey
	cancel context.CancelFunc
	done   chan struct{}
}

func newEnv(t testing.TB, b workflowtest.Backend, opts ...workflow.Option) *env {
	t.Helper()
	feed := workflow.NewFeed(64)
	ev := &env{t: t, b: b, feed: feed, pub: newRecorder(t, feed), auth: newMembers(),
		c: workflowtest.Community(t, b, "wf.example"), ch: workflowtest.ChannelID(), owner: workflowtest.Hex32()}
	var err error
	ev.user, err = nostr.GenerateSecretKey()
	if err != nil {
		t.Fatal(err)
	}
	ev.auth.set(ev.ch, ev.owner, channel.RoleAdmin)
	ev.auth.set(ev.ch, ev.user.PublicKey(), channel.RoleMember)
	base := []workflow.Option{workflow.WithAuthority(ev.auth), workflow.WithPollInterval(20 * time.Millisecond),
		workflow.WithCacheTTL(0)}
	ev.e, err = workflow.New(b, feed, ev.pub, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ev.start()
	return ev
}

// sibling is a second engine (another pod) on the same backend, sharing
// the relay side of ev.
func (ev *env) sibling(opts ...workflow.Option) *env {
	ev.t.Helper()
	cp := *ev
	cp.feed = workflow.NewFeed(64)
	base := []workflow.Option{workflow.WithAuthority(ev.auth), workflow.WithPollInterval(20 * time.Millisecond),
		workflow.WithCacheTTL(0)}
	var err error
	cp.e, err = workflow.New(ev.b, cp.feed, ev.pub, append(base, opts...)...)
	if err != nil {
		ev.t.Fatal(err)
	}
	cp.start()
	return &cp
}

func (ev *env) start() {
	ctx, cancel := context.WithCancel(context.Background())
	ev.cancel, ev.done = cancel, make(chan struct{})
	go func() {
		defer close(ev.done)
		_ = ev.e.Run(ctx)
	}()
	ev.t.Cleanup(ev.stop)
}

func (ev *env) stop() {
	ev.cancel()
	<-ev.done
}

// define stores a workflow owned by ev.owner.
func (ev *env) define(yaml string) workflow.Workflow {
	ev.t.Helper()
	w, err := ev.e.Define(context.Background(), ev.c, workflow.DefineRequest{
		ID: workflow.NewID(), Channel: ev.ch, Author: ev.owner, YAML: []byte(yaml), EventID: workflowtest.Hex32()})
	if err != nil {
		ev.t.Fatalf("Define: %v", err)
	}
	return w
}

// post stores a user's event in the channel (through the feed, as the
// relay does after storing it).
func (ev *env) post(kind int, content string, tags ...nostr.Tag) *nostr.Event {
	ev.t.Helper()
	e := &nostr.Event{CreatedAt: time.Now().Unix(), Kind: kind, Content: content,
		Tags: append(nostr.Tags{{"h", ev.ch.String()}}, tags...)}
	if err := e.Sign(ev.user); err != nil {
		ev.t.Fatal(err)
	}
	if err := ev.feed.Publish(context.Background(), ev.c, e); err != nil {
		ev.t.Fatal(err)
	}
	return e
}

// runs returns the workflow's runs.
func (ev *env) runs(w workflow.Workflow) []workflow.Run {
	ev.t.Helper()
	rs, _, err := ev.b.Runs(context.Background(), ev.c, w.ID, workflow.RunPage{Limit: 1000})
	if err != nil {
		ev.t.Fatal(err)
	}
	return rs
}

// finished waits for n runs of w to be terminal and returns them.
func (ev *env) finished(w workflow.Workflow, n int) []workflow.Run {
	ev.t.Helper()
	var rs []workflow.Run
	eventually(ev.t, func() bool {
		rs = ev.runs(w)
		if len(rs) != n {
			return false
		}
		for _, r := range rs {
			if !r.Status.Terminal() {
				return false
			}
		}
		return true
	}, "%d finished runs of %s (have %+v)", n, w.Name, &rs)
	return rs
}

// eventually polls cond until it holds, failing the test after a minute.
// The bound only stops a broken engine from hanging the suite: it is far
// above what any test needs on an idle machine, because a -race run of
// every package can leave the engine's goroutines seconds behind.
func eventually(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+format, args...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
