package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nostr"
)

// TestScaleOutScheduleOncePerSlot runs three buzzd pods over PostgreSQL
// and Redis with a 2 s schedule (BUZZ_WORKFLOW_MIN_SCHEDULE_INTERVAL, a
// test-only setting, lowers the 60 s floor). Every pod ticks; each slot's
// run posts one message naming its slot. One pod is killed with SIGKILL
// after the first fire; the other two go on. Over at least three slots
// after the kill, no slot fired twice and every fired instant is a slot
// of the schedule (a multiple of 2 s), not a pod's clock.
func TestScaleOutScheduleOncePerSlot(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	dbURL := freshDatabase(t)
	extra := map[string]string{
		"BUZZ_WORKFLOW_MIN_SCHEDULE_INTERVAL": "2s",
		"BUZZ_WORKFLOW_LEASE":                 "1s",
		"BUZZ_WORKFLOW_POLL":                  "50ms",
	}
	d := startDeployment(t, 3, dbURL, "redis://127.0.0.1:6379/0", extra)

	owner := mustKey(t)
	c := dialAs(t, d.pods[1].port, hostAlpha)
	ch := newUUID()
	if ok := c.publish(sign(t, owner, 9007, nostr.Tag{"h", ch}, nostr.Tag{"name", "ticks"})); !ok.OK {
		t.Fatalf("create channel: %q", ok.Message)
	}
	def := &nostr.Event{Kind: 30620, CreatedAt: time.Now().Unix(), Content: `name: Tick
trigger: {on: schedule, interval: 2s}
steps:
  - {id: say, action: send_message, text: "slot {{trigger.scheduled_for}}"}
`, Tags: nostr.Tags{{"d", newUUID()}, {"h", ch}}}
	if err := def.Sign(owner); err != nil {
		t.Fatal(err)
	}
	if ok := c.publish(def); !ok.OK {
		t.Fatalf("define: %q", ok.Message)
	}

	// slots returns how many messages name each slot.
	slots := func() map[string]int {
		evs, closed := c.req(nostr.Filter{Kinds: []int{9}, Tags: map[string][]string{"h": {ch}}})
		if closed != "" {
			t.Fatalf("REQ closed: %s", closed)
		}
		out := map[string]int{}
		for _, e := range evs {
			out[strings.TrimPrefix(e.Content, "slot ")]++
		}
		return out
	}
	waitSlots := func(n int) map[string]int {
		deadline := time.Now().Add(60 * time.Second)
		for {
			s := slots()
			if len(s) >= n {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d slots fired in a minute: %v", len(s), s)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	before := waitSlots(1)
	if err := d.pods[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.pods[0].done
	got := waitSlots(len(before) + 3)
	// Let a possible duplicate of the latest slot land before judging.
	time.Sleep(time.Second)
	got = slots()
	for slot, n := range got {
		if n != 1 {
			t.Errorf("slot %s fired %d times", slot, n)
		}
		at, err := time.Parse(time.RFC3339, slot)
		if err != nil || at.Unix()%2 != 0 {
			t.Errorf("fired instant %q is not a slot of the schedule (%v)", slot, err)
		}
	}
	if t.Failed() {
		t.Fatalf("slots: %v", got)
	}
	t.Logf("%d slots fired once each (%d before the kill)", len(got), len(before))
}
