package embedded

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

type recordLines struct {
	mu   sync.Mutex
	recs []map[string]string
}

func (h *recordLines) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLines) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordLines) WithGroup(string) slog.Handler            { return h }
func (h *recordLines) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message, "level": r.Level.String()}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	h.recs = append(h.recs, m)
	h.mu.Unlock()
	return nil
}

// TestCheckpointLog: a checkpoint a second makes one DEBUG line a minute,
// with the count and the frames copied.
func TestCheckpointLog(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h := &recordLines{}
	l := &checkpointLog{log: slog.New(h), now: func() time.Time { return now }}
	for range 60 {
		l.add(100, 10)
		now = now.Add(time.Second)
	}
	if len(h.recs) != 0 {
		t.Fatalf("lines before a minute: %v", h.recs)
	}
	l.add(120, 5) // the 61st, a minute after the first
	if len(h.recs) != 1 {
		t.Fatalf("%d lines after a minute", len(h.recs))
	}
	got := h.recs[0]
	if got["msg"] != "sqlite: checkpoints" || got["level"] != "DEBUG" || got["count"] != "61" || got["copied"] != "605" || got["log_frames"] != "120" || got["over"] != "1m0s" {
		t.Fatalf("line %v", got)
	}
	for range 59 {
		now = now.Add(time.Second)
		l.add(1, 1)
	}
	if len(h.recs) != 1 {
		t.Fatalf("%d lines, want the counts to start over", len(h.recs))
	}
}
