package embedded

import (
	"testing"
	"time"
)

// TestMaintainScheduleWaitsForReads: the upkeep runs once the store has
// neither committed nor begun a read for the idle delay; reads that do not
// pause hold it back no longer than the max delay after the first commit
// not yet handled.
func TestMaintainScheduleWaitsForReads(t *testing.T) {
	const idle, max = 50 * time.Millisecond, time.Second
	t0 := time.Unix(1_700_000_000, 0)
	m := maintainSchedule{idle: idle, max: max}
	want := func(what string, got, want time.Duration) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: wait %v, want %v", what, got, want)
		}
	}

	// No read: due once a commit is idle for the delay.
	want("first commit", m.commit(t0, 0), idle)
	want("a commit during the wait", m.commit(t0.Add(30*time.Millisecond), 0), idle)
	want("idle delay over, no read", m.idleEnded(t0.Add(80*time.Millisecond), 0), 0)
	m.ran()

	// Reads during the wait: wait again, then due once they pause.
	t1 := t0.Add(10 * time.Second)
	want("commit", m.commit(t1, 7), idle)
	want("reads began meanwhile", m.idleEnded(t1.Add(idle), 12), idle)
	want("no read since", m.idleEnded(t1.Add(2*idle), 12), 0)
	m.ran()

	// Reads that never pause: due at the max delay after the first commit,
	// the last wait cut to what is left of it.
	t2 := t0.Add(20 * time.Second)
	reads := uint64(100)
	want("commit", m.commit(t2, reads), idle)
	at := t2
	for i := 1; ; i++ {
		at = at.Add(idle)
		reads += 40
		w := m.idleEnded(at, reads)
		if w == 0 {
			break
		}
		if left := max - at.Sub(t2); w > left {
			t.Fatalf("wait %d: %v, more than the %v left of the max delay", i, w, left)
		}
		if i > 100 {
			t.Fatal("reads held the upkeep back past the max delay")
		}
	}
	if got := at.Sub(t2); got != max {
		t.Fatalf("upkeep due %v after the first commit, want the max delay %v", got, max)
	}
	m.ran()

	// A commit past the max delay of the first pending one: due at once.
	t3 := t0.Add(30 * time.Second)
	want("commit", m.commit(t3, 0), idle)
	want("commit past the max delay", m.commit(t3.Add(max), 5), 0)
}
