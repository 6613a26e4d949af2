package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/internal/fakeclock"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflow/workflowtest"
)

func TestScheduleParse(t *testing.T) {
	def := func(trig string) string {
		return "name: s\ntrigger: " + trig + "\nsteps: [{id: a, action: send_message, text: hi}]"
	}
	for _, c := range []struct {
		trig     string
		cron     string
		interval time.Duration
	}{
		{`{on: schedule, cron: "*/5  * * * *"}`, "*/5 * * * *", 0},
		{`{on: schedule, cron: "30 */5 * * * *"}`, "30 */5 * * * *", 0},
		{`{on: schedule, cron: "0 0 12 * * * 2099", timezone: Europe/Berlin}`, "0 0 12 * * * 2099", 0},
		{`{on: schedule, interval: 5m}`, "", 5 * time.Minute},
		{`{on: schedule, interval: 3600}`, "", time.Hour},
	} {
		d, err := workflow.Parse([]byte(def(c.trig)), builtins(t))
		if err != nil {
			t.Errorf("%s: %v", c.trig, err)
			continue
		}
		s := d.Trigger.Schedule
		if s.Cron != c.cron || s.Interval != c.interval {
			t.Errorf("%s: got cron %q interval %s", c.trig, s.Cron, s.Interval)
		}
		d2, err := workflow.DecodeJSON(d.CanonicalJSON(), builtins(t))
		if err != nil || d2.Hash() != d.Hash() || d2.Trigger.Schedule.Cron != s.Cron || d2.Trigger.Schedule.Interval != s.Interval {
			t.Errorf("%s: canonical round trip: %v", c.trig, err)
		}
	}
	for _, trig := range []string{
		`{on: schedule}`,
		`{on: schedule, interval: 59s}`,
		`{on: schedule, interval: 1.5}`,
		`{on: schedule, interval: 90s, timezone: UTC}`,
		`{on: schedule, cron: "* * * *"}`,
		`{on: schedule, cron: "* * * * * * * *"}`,
		`{on: schedule, cron: "@daily"}`,
		`{on: schedule, cron: "0 0 0 1 1 * 2001"}`,
		`{on: schedule, cron: "* * * * *", filter: "true"}`,
		`{on: schedule, cron: "* * * * *", timezone: Local}`,
	} {
		if _, err := workflow.Parse([]byte(def(trig)), builtins(t)); err == nil || !strings.HasPrefix(err.Error(), "trigger") {
			t.Errorf("%s: accepted or unnamed field: %v", trig, err)
		}
	}
	// The floor is Buzz's 60 s; an engine option lowers it for tests.
	e := newTestEngine(t, workflow.WithMinScheduleInterval(2*time.Second))
	if _, err := e.Parse([]byte(def(`{on: schedule, interval: 2s}`))); err != nil {
		t.Fatalf("engine with a 2s floor refused 2s: %v", err)
	}
	if _, err := workflow.New(nopStore{}, nopSource{}, nopPub{}, workflow.WithAuthority(allMembers{}), workflow.WithMinScheduleInterval(500*time.Millisecond)); err == nil {
		t.Fatal("accepted a sub-second floor")
	}
}

func TestScheduleSlots(t *testing.T) {
	at := time.Date(2026, 3, 29, 0, 30, 17, 0, time.UTC)
	d, err := workflow.Parse([]byte("name: s\ntrigger: {on: schedule, cron: \"0 2 * * *\", timezone: Europe/Berlin}\nsteps: [{id: a, action: send_message, text: hi}]"), builtins(t))
	if err != nil {
		t.Fatal(err)
	}
	s := d.Trigger.Schedule
	// 02:00 Berlin on 28 March 2026 (CET, UTC+1) is 01:00 UTC.
	if l, ok := s.Latest(at); !ok || !l.Equal(time.Date(2026, 3, 28, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("Latest = %v %v", l, ok)
	}
	iv := workflow.Schedule{Interval: 90 * time.Second}
	l, _ := iv.Latest(at)
	n, _ := iv.Next(at)
	if l.Unix()%90 != 0 || l.After(at) || n.Sub(l) != 90*time.Second || !n.After(at) {
		t.Errorf("interval slots %v %v around %v", l, n, at)
	}
	if l2, _ := iv.Latest(l); !l2.Equal(l) {
		t.Errorf("a slot is not its own latest slot: %v", l2)
	}
}

func scheduleEngine(t *testing.T, b workflowtest.Backend, clock *fakeclock.Clock) *workflow.Engine {
	t.Helper()
	e, err := workflow.New(b, nopSource{}, nopPub{}, workflow.WithAuthority(allMembers{}))
	if err != nil {
		t.Fatal(err)
	}
	e.SetClock(clock.Now)
	return e
}

func tick(t *testing.T, e *workflow.Engine) int {
	t.Helper()
	n, err := e.ScheduleTick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestScheduleFiresLatestSlotOnce: a slot fires once however many engines
// tick; after downtime only the latest missed slot fires; a disabled
// workflow does not fire and, re-enabled, does not catch up.
func TestScheduleFiresLatestSlotOnce(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		b := open(t)
		ctx := context.Background()
		c := workflowtest.Community(t, b, "sched.example")
		ch := workflowtest.ChannelID()
		clock := fakeclock.New(time.Time{})
		engines := []*workflow.Engine{scheduleEngine(t, b, clock), scheduleEngine(t, b, clock), scheduleEngine(t, b, clock)}
		wf, err := engines[0].Define(ctx, c, workflow.DefineRequest{ID: workflow.NewID(), Channel: ch, Author: workflowtest.Hex32(),
			YAML: []byte("name: tick\ntrigger: {on: schedule, interval: 1m}\nsteps: [{id: a, action: send_message, text: \"at {{trigger.scheduled_for}}\"}]")})
		if err != nil {
			t.Fatal(err)
		}
		base := time.Now().UTC().Truncate(time.Minute).Add(2 * time.Minute)
		runs := func() []workflow.Run {
			t.Helper()
			rs, _, err := b.Runs(ctx, c, wf.ID, workflow.RunPage{})
			if err != nil {
				t.Fatal(err)
			}
			return rs
		}
		tickAll := func() int {
			var wg sync.WaitGroup
			var mu sync.Mutex
			total := 0
			for _, e := range engines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := tick(t, e)
					mu.Lock()
					total += n
					mu.Unlock()
				}()
			}
			wg.Wait()
			return total
		}

		clock.Set(base.Add(10 * time.Second))
		if n := tickAll(); n != 1 {
			t.Fatalf("first slot: %d fires, want 1", n)
		}
		if n := tickAll(); n != 0 {
			t.Fatalf("same slot again: %d fires", n)
		}
		rs := runs()
		if len(rs) != 1 || rs[0].Trigger["scheduled_for"] != base.Format(time.RFC3339) ||
			rs[0].TriggerEventID != workflow.ScheduleEventID(wf.ID, base) || rs[0].Status != workflow.RunPending {
			t.Fatalf("runs after first slot: %+v", rs)
		}

		// Ten slots of downtime: only the latest fires.
		clock.Set(base.Add(10*time.Minute + 30*time.Second))
		if n := tickAll(); n != 1 {
			t.Fatalf("after downtime: %d fires, want 1", n)
		}
		rs = runs()
		if len(rs) != 2 || rs[0].Trigger["scheduled_for"] != base.Add(10*time.Minute).Format(time.RFC3339) {
			t.Fatalf("runs after downtime: %d, newest %v", len(rs), rs[0].Trigger)
		}

		// Disabled: slots pass without firing; re-enabled: the next slot fires, no catch-up.
		if err := engines[0].SetEnabled(ctx, c, wf.ID, false); err != nil {
			t.Fatal(err)
		}
		clock.Set(base.Add(11*time.Minute + time.Second))
		if n := tickAll(); n != 0 {
			t.Fatalf("disabled workflow fired %d", n)
		}
		if err := engines[0].SetEnabled(ctx, c, wf.ID, true); err != nil {
			t.Fatal(err)
		}
		if n := tickAll(); n != 0 {
			t.Fatalf("re-enabled workflow caught up %d slots", n)
		}
		clock.Set(base.Add(12*time.Minute + time.Second))
		if n := tickAll(); n != 1 {
			t.Fatalf("re-enabled workflow: %d fires at the next slot", n)
		}
		if len(runs()) != 3 {
			t.Fatalf("runs: %d, want 3", len(runs()))
		}

		// Redefined as another trigger: no more fires.
		if _, err := engines[0].Define(ctx, c, workflow.DefineRequest{ID: wf.ID, Channel: ch, Author: wf.Owner,
			YAML: []byte("name: tick\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]")}); err != nil {
			t.Fatal(err)
		}
		clock.Set(base.Add(20 * time.Minute))
		if n := tickAll(); n != 0 {
			t.Fatalf("webhook workflow fired %d times by schedule", n)
		}
	})
}

// TestScheduleNoSlotBeforeDefinition: a workflow defined after a slot does
// not fire that slot.
func TestScheduleNoSlotBeforeDefinition(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		b := open(t)
		ctx := context.Background()
		c := workflowtest.Community(t, b, "late.example")
		clock := fakeclock.New(time.Time{})
		e := scheduleEngine(t, b, clock)
		before := time.Now().UTC()
		wf, err := e.Define(ctx, c, workflow.DefineRequest{ID: workflow.NewID(), Channel: workflowtest.ChannelID(), Author: workflowtest.Hex32(),
			YAML: []byte(fmt.Sprintf("name: x\ntrigger: {on: schedule, cron: \"%d %d * * *\"}\nsteps: [{id: a, action: send_message, text: hi}]", before.Add(-time.Hour).Minute(), before.Add(-time.Hour).Hour()))})
		if err != nil {
			t.Fatal(err)
		}
		clock.Set(before.Add(time.Minute))
		if n := tick(t, e); n != 0 {
			t.Fatalf("fired a slot from before its definition (%d)", n)
		}
		clock.Set(before.Add(25 * time.Hour))
		if n := tick(t, e); n != 1 {
			t.Fatalf("next day's slot: %d fires", n)
		}
		rs, _, _ := b.Runs(ctx, c, wf.ID, workflow.RunPage{})
		if len(rs) != 1 {
			t.Fatalf("runs: %d", len(rs))
		}
	})
}

// panicOnce panics in its first DueSchedules call.
type panicOnce struct {
	workflowtest.Backend
	calls atomic.Int32
}

func (p *panicOnce) DueSchedules(ctx context.Context, now time.Time, max int) ([]workflow.DueSchedule, error) {
	if p.calls.Add(1) == 1 {
		panic("scheduler exploded")
	}
	return p.Backend.DueSchedules(ctx, now, max)
}

// TestScheduleLoopSupervised: the scheduler is an engine loop; a panic in
// it is recovered, shown by Health, and the loop restarted, after which it
// fires.
func TestScheduleLoopSupervised(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) workflowtest.Backend) {
		b := &panicOnce{Backend: open(t)}
		ctx, cancel := context.WithCancel(context.Background())
		c := workflowtest.Community(t, b, "supervised.example")
		clock := fakeclock.New(time.Now())
		e, err := workflow.New(b, nopSource{}, nopPub{}, workflow.WithAuthority(allMembers{}),
			workflow.WithScheduleTick(20*time.Millisecond), workflow.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		e.SetClock(clock.Now)
		wf, err := e.Define(ctx, c, workflow.DefineRequest{ID: workflow.NewID(), Channel: workflowtest.ChannelID(), Author: workflowtest.Hex32(),
			YAML: []byte("name: s\ntrigger: {on: schedule, interval: 1m}\nsteps: [{id: a, action: send_message, text: hi}]")})
		if err != nil {
			t.Fatal(err)
		}
		clock.Set(time.Now().UTC().Truncate(time.Minute).Add(2*time.Minute + time.Second))
		done := make(chan struct{})
		go func() { defer close(done); _ = e.Run(ctx) }()
		defer func() { cancel(); <-done }()
		eventually(t, func() bool {
			rs, _, _ := b.Runs(ctx, c, wf.ID, workflow.RunPage{})
			return len(rs) == 1
		}, "a scheduled run after the scheduler's panic")
		var l workflow.LoopHealth
		for _, h := range e.Health().Loops {
			if h.Name == workflow.LoopSchedule {
				l = h
			}
		}
		if l.Restarts != 1 || !strings.Contains(l.LastError, "scheduler exploded") || !l.Running {
			t.Fatalf("schedule loop health %+v", l)
		}
		if err := e.Check(); err != nil {
			t.Fatalf("Check after recovery: %v", err)
		}
	})
}

// FuzzSchedule: any schedule trigger parses or is refused with a field
// error, never a panic; what parses survives its canonical JSON, and its
// slots are ordered around any instant (latest ≤ t < next).
func FuzzSchedule(f *testing.F) {
	f.Add("*/5 * * * *", "", "", int64(1780000000))
	f.Add("0 0 12 * * 1-5 2030", "Europe/Berlin", "", int64(1780000000))
	f.Add("30 2 * * *", "America/New_York", "", int64(1772953200)) // a DST change
	f.Add("", "", "90s", int64(-5))
	f.Add("", "", "86400", int64(0))
	f.Add("0 0 31 2 *", "", "", int64(1780000000))
	e, err := workflow.New(nopStore{}, nopSource{}, nopPub{}, workflow.WithAuthority(allMembers{}), workflow.WithMinScheduleInterval(time.Second))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cron, tz, interval string, unix int64) {
		trig := `{on: schedule`
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		if cron != "" {
			trig += ", cron: " + q(cron)
		}
		if tz != "" {
			trig += ", timezone: " + q(tz)
		}
		if interval != "" {
			trig += ", interval: " + q(interval)
		}
		src := "name: s\ntrigger: " + trig + "}\nsteps: [{id: a, action: send_message, text: hi}]"
		d, err := e.Parse([]byte(src))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "trigger") && !strings.HasPrefix(err.Error(), "not valid YAML") {
				t.Fatalf("error names no trigger field: %v", err)
			}
			return
		}
		d2, err := workflow.DecodeJSON(d.CanonicalJSON(), e.Actions())
		if err != nil || d2.Hash() != d.Hash() {
			t.Fatalf("canonical round trip: %v\n%s", err, d.CanonicalJSON())
		}
		at := time.Unix(unix%(1<<33), 0).UTC()
		s := d.Trigger.Schedule
		if l, ok := s.Latest(at); ok && l.After(at) {
			t.Fatalf("latest slot %v after %v", l, at)
		}
		if n, ok := s.Next(at); ok && !n.After(at) {
			t.Fatalf("next slot %v not after %v", n, at)
		}
	})
}
