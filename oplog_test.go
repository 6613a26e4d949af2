package buzz

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/buzzrelay/buzz/internal/observetest"
	"github.com/buzzrelay/buzz/tenant"
)

// TestLogSummary: every interval one INFO line sums up what happened since
// the previous one (open connections are a level, the rest deltas).
func TestLogSummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &observetest.LogCapture{}
		o := newOpLog(slog.New(h), time.Now)
		m := summaryMetrics{next: noMetrics{}, o: o}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go o.run(ctx, time.Minute, done)

		tc := newTenantContextForTest(t)
		m.ConnOpened(tc)
		m.ConnOpened(tc)
		m.EventIngested(tc, true, true, "")
		m.EventIngested(tc, false, false, "invalid: bad")
		m.LiveDelivered(tc)
		o.connRefused(ctx, "unmapped_host")
		o.runFinished(true)
		o.runFinished(false)
		time.Sleep(time.Minute) // fake time in the bubble: one interval
		synctest.Wait()
		got := h.Lines("buzz: summary")
		if len(got) != 1 {
			t.Fatalf("%d summary lines after one interval: %v", len(got), got)
		}
		want := map[string]string{"level": "INFO", "connections": "2", "events_in": "2", "events_out": "1", "refusals": "2", "workflow_runs": "2", "workflow_runs_failed": "1"}
		for k, v := range want {
			if got[0][k] != v {
				t.Errorf("%s = %q, want %q (%v)", k, got[0][k], v, got[0])
			}
		}

		m.ConnClosed(tc)
		m.EventIngested(tc, true, true, "")
		time.Sleep(time.Minute)
		synctest.Wait()
		got = h.Lines("buzz: summary")
		if len(got) != 2 || got[1]["connections"] != "1" || got[1]["events_in"] != "1" || got[1]["refusals"] != "0" || got[1]["workflow_runs"] != "0" {
			t.Fatalf("second summary: %v", got)
		}
		cancel()
		<-done
	})
}

// TestConnRefusedRateLimited: at most one "connection refused" line per
// reason per interval; the next one counts the suppressed refusals.
func TestConnRefusedRateLimited(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h := &observetest.LogCapture{}
	o := newOpLog(slog.New(h), func() time.Time { return now })
	for range 1000 {
		o.connRefused(t.Context(), "too_many_from_address")
	}
	o.connRefused(t.Context(), "unmapped_host")
	got := h.Lines("buzz: connection refused")
	if len(got) != 2 || got[0]["reason"] != "too_many_from_address" || got[1]["reason"] != "unmapped_host" || got[0]["suppressed"] != "" {
		t.Fatalf("first lines: %v", got)
	}
	now = now.Add(refusalLogInterval - time.Second)
	o.connRefused(t.Context(), "too_many_from_address")
	if n := len(h.Lines("buzz: connection refused")); n != 2 {
		t.Fatalf("%d lines within the interval", n)
	}
	now = now.Add(time.Second)
	o.connRefused(t.Context(), "too_many_from_address")
	got = h.Lines("buzz: connection refused")
	if len(got) != 3 || got[2]["level"] != "INFO" || got[2]["suppressed"] != "1000" {
		t.Fatalf("after the interval: %v", got[2:])
	}
	if o.connsRefused.Load() != 1003 {
		t.Fatalf("counted %d refusals", o.connsRefused.Load())
	}
}

// TestConnRefusedLogged: a real relay refusing an upgrade for an unmapped
// host logs the reason at INFO without the host, and names the host at
// DEBUG.
func TestConnRefusedLogged(t *testing.T) {
	h := &observetest.LogCapture{}
	tr := newTestRelay(t, WithLogger(slog.New(h)), WithLogSummary(0))
	req, err := http.NewRequest("GET", tr.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "nobody.example"
	for _, k := range []string{"Connection", "Upgrade", "Sec-WebSocket-Version", "Sec-WebSocket-Key"} {
		req.Header.Set(k, map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}[k])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d", resp.StatusCode)
	}
	info := h.Lines("buzz: connection refused")
	if len(info) != 1 || info[0]["level"] != "INFO" || info[0]["reason"] != "unmapped_host" || info[0]["host"] != "" {
		t.Fatalf("INFO lines %v", info)
	}
	debug := h.Lines("buzz: upgrade refused: host not bound")
	if len(debug) != 1 || debug[0]["level"] != "DEBUG" || !strings.Contains(debug[0]["host"], "nobody.example") {
		t.Fatalf("DEBUG lines %v", debug)
	}
}

func TestWithLogSummaryValidation(t *testing.T) {
	var c config
	if err := WithLogSummary(time.Millisecond)(&c); err == nil {
		t.Error("1ms accepted")
	}
	if err := WithLogSummary(0)(&c); err != nil || !c.logSummarySet || c.logSummary != 0 {
		t.Errorf("0: %v %+v", err, c.logSummary)
	}
}

// oneHost is a tenant.Directory of one host.
type oneHost struct {
	host string
	id   tenant.CommunityID
}

func (d oneHost) LookupHost(_ context.Context, host string) (tenant.CommunityID, error) {
	if host == d.host {
		return d.id, nil
	}
	return tenant.CommunityID{}, tenant.ErrUnmappedHost
}

func newTenantContextForTest(t *testing.T) tenant.TenantContext {
	t.Helper()
	tc, err := tenant.Bind(context.Background(), oneHost{"a.example", tenant.NewCommunityID()}, "a.example")
	if err != nil {
		t.Fatal(err)
	}
	return tc
}
