package workflow_test

import (
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/workflow"
)

func builtins(t *testing.T) workflow.ActionLookup {
	t.Helper()
	e := newTestEngine(t)
	return e.Actions()
}

func TestParseEcho(t *testing.T) {
	src := `
name: Echo
trigger: {on: message_posted, filter: 'str_contains(trigger_text, "ping")'}
steps:
  - id: reply
    action: send_message
    text: "pong to {{trigger.author}}: {{trigger.text}}"
`
	d, err := workflow.Parse([]byte(src), builtins(t))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "Echo" || !d.Enabled || d.Trigger.On != workflow.TriggerMessagePosted || len(d.Steps) != 1 {
		t.Fatalf("parsed %+v", d)
	}
	if got := d.Steps[0].Fields["text"]; got != "pong to {{trigger.author}}: {{trigger.text}}" {
		t.Fatalf("text field %v", got)
	}
	j := d.CanonicalJSON()
	want := `{"enabled":true,"name":"Echo","steps":[{"action":"send_message","id":"reply","text":"pong to {{trigger.author}}: {{trigger.text}}"}],"trigger":{"filter":"str_contains(trigger_text, \"ping\")","on":"message_posted"}}`
	if string(j) != want {
		t.Fatalf("canonical JSON\n got %s\nwant %s", j, want)
	}
	d2, err := workflow.DecodeJSON(j, builtins(t))
	if err != nil {
		t.Fatal(err)
	}
	if d2.Hash() != d.Hash() {
		t.Fatal("hash changed through canonical JSON")
	}
	if len(workflow.RevisionOf(d.Hash())) != 32 {
		t.Fatal("revision is not 32 hex")
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	cases := []struct{ src, field string }{
		{`trigger: {on: webhook}
steps: [{id: a, action: delay, duration: 5}]`, "name"},
		{`name: x
trigger: {on: bogus}
steps: [{id: a, action: delay, duration: 5}]`, "trigger.on"},
		{`name: x
trigger: {on: schedule, cron: "61 * * * *"}
steps: [{id: a, action: delay, duration: 5}]`, "trigger.cron"},
		{`name: x
trigger: {on: schedule, interval: 30s}
steps: [{id: a, action: delay, duration: 5}]`, "trigger.interval"},
		{`name: x
trigger: {on: schedule, cron: "* * * * *", interval: 5m}
steps: [{id: a, action: delay, duration: 5}]`, "trigger"},
		{`name: x
trigger: {on: schedule, cron: "* * * * *", timezone: Mars/Olympus}
steps: [{id: a, action: delay, duration: 5}]`, "trigger.timezone"},
		{`name: x
trigger: {on: webhook}
steps: [{id: "bad id", action: delay, duration: 5}]`, "steps[0].id"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, action: delay, duration: 5}, {id: a, action: delay, duration: 5}]`, "steps[1].id"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, action: delay, duration: 5, depends_on: [b]}, {id: b, action: delay, duration: 5}]`, "steps[0].depends_on[0]"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, action: nope}]`, "steps[0].action"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, action: send_message}]`, "steps[0].text"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, action: send_message, text: hi, reply_in_thread: true}]`, "steps[0].reply_in_thread"},
		{`name: x
trigger: {on: message_posted, filter: "str_contains(("}
steps: [{id: a, action: send_message, text: hi}]`, "trigger.filter"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, if: "1 +", action: send_message, text: hi}]`, "steps[0].if"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, action: send_message, text: hi, colour: red}]`, "steps[0].colour"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, action: send_message, text: hi, timeout_secs: 0}]`, "steps[0].timeout_secs"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, action: delay, duration: 1y}]`, "steps[0].duration"},
		{`name: x
trigger: {on: webhook}
steps: [{id: a, action: call_webhook, url: "https://example.com"}]`, "steps[0].action"},
		{`name: x
trigger: {on: webhook}
steps: []`, "steps"},
		{`name: x
trigger: {on: webhook}
enabled: maybe
steps: [{id: a, action: delay, duration: 5}]`, "enabled"},
		{`name: x
trigger: {on: webhook}
steps: [{id: ` + strings.Repeat("a", 65) + `, action: delay, duration: 5}]`, "steps[0].id"},
		{`name: x
trigger: {on: message_posted, filter: "` + strings.Repeat("a", 4097) + `"}
steps: [{id: a, action: delay, duration: 5}]`, "trigger.filter"},
	}
	for _, c := range cases {
		_, err := workflow.Parse([]byte(c.src), builtins(t))
		if err == nil {
			t.Errorf("accepted:\n%s", c.src)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.field+": ") {
			t.Errorf("error %q does not name %s", err, c.field)
		}
	}
}
