package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/internal/testenv"
	"github.com/buzzrelay/buzz/pubsub/redis"
	"github.com/buzzrelay/buzz/store/embedded"
)

// podLog is a slog handler that passes every INFO "buzz: pod …" record,
// with its pod and version, to a channel.
type podLog chan [3]string

func (p podLog) Enabled(context.Context, slog.Level) bool { return true }
func (p podLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level != slog.LevelInfo || (r.Message != "buzz: pod joined" && r.Message != "buzz: pod left") {
		return nil
	}
	var line [3]string
	line[0] = r.Message
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "pod":
			line[1] = a.Value.String()
		case "version":
			line[2] = a.Value.String()
		}
		return true
	})
	p <- line
	return nil
}
func (p podLog) WithAttrs([]slog.Attr) slog.Handler { return p }
func (p podLog) WithGroup(string) slog.Handler      { return p }

// startPod runs a relay named name on the test Redis in namespace ns,
// logging to logs.
func startPod(t *testing.T, ns, name, version string, logs podLog) *buzz.Relay {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := redis.New(ctx, "redis://"+testenv.RedisAddr(), redis.WithNamespace(ns), redis.WithClientName(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	st, err := embedded.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	rel, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithBroker(b), buzz.WithControlBus(b),
		buzz.WithPod(name, version), buzz.WithLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

func shutdown(t *testing.T, rel *buzz.Relay) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func waitLine(t *testing.T, logs podLog, want [3]string) {
	t.Helper()
	select {
	case got := <-logs:
		if got != want {
			t.Fatalf("logged %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %q logged", want)
	}
}

// TestPodJoinedLeft: a pod that starts is logged by the pods already
// running, with its name and version, and again when it shuts down; a pod
// never logs itself.
func TestPodJoinedLeft(t *testing.T) {
	testenv.NeedRedis(t)
	ns := testenv.RandomName("podlog")
	logsA, logsB := make(podLog, 8), make(podLog, 8)
	a := startPod(t, ns, "pod-a", "v1.2.3", logsA)
	t.Cleanup(func() { shutdown(t, a) })
	b := startPod(t, ns, "pod-b", "v1.2.4", logsB)

	waitLine(t, logsA, [3]string{"buzz: pod joined", "pod-b", "v1.2.4"})
	shutdown(t, b)
	waitLine(t, logsA, [3]string{"buzz: pod left", "pod-b", "v1.2.4"})
	// b ran its own announcements through its bus: it logged neither.
	select {
	case got := <-logsB:
		t.Fatalf("pod-b logged %q", got)
	default:
	}
}
