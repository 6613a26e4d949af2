package workflow_test

import (
	"errors"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/buzzrelay/buzz/workflow"
)

func TestExpand(t *testing.T) {
	vars := map[string]any{
		"trigger": map[string]any{
			"text":   "hello {{trigger.author}} {{steps.a.output.x}}",
			"author": "3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d",
			"n":      float64(42),
			"obj":    map[string]any{"k": "<v>"},
			"long":   "abcdefghij",
		},
		"steps": map[string]any{
			"a": map[string]any{"output": map[string]any{"x": "X", "deep": map[string]any{"y": true}}},
		},
	}
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"{{trigger.n}}", "42"},
		{"{{ trigger.obj }}", `{"k":"<v>"}`},
		{"{{trigger.obj | json}}", `{"k":"<v>"}`},
		{"{{trigger.long|json}}", `"abcdefghij"`},
		{"{{steps.a.output.x}}/{{steps.a.output.deep.y}}", "X/true"},
		{"{{trigger.long | truncate(4)}}", "abcd…"},
		{"{{trigger.long | truncate(40)}}", "abcdefghij"},
		{"{{trigger.author | npub}}", "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6"},
		{"{{trigger.author | truncate_pubkey}}", "npub180cvv07…h6w6"},
		// Unknown paths, filters and malformed placeholders stay literal.
		{"{{trigger.nope}} {{steps.a.x}} {{other.x}} {{trigger.n | shout}} {{trigger.n", "{{trigger.nope}} {{steps.a.x}} {{other.x}} {{trigger.n | shout}} {{trigger.n"},
		{"{{trigger.text | npub}}", "{{trigger.text | npub}}"},
		// Single pass: a substituted value is never expanded again.
		{"said: {{trigger.text}}", "said: hello {{trigger.author}} {{steps.a.output.x}}"},
		{"{{trigger.text | json}}", `"hello {{trigger.author}} {{steps.a.output.x}}"`},
	}
	for _, c := range cases {
		if got := workflow.Expand(c.in, vars); got != c.want {
			t.Errorf("Expand(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzExpand: expansion never panics, and text without "{{" is unchanged.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"{{trigger.text}}", "{{steps.a.output.x | truncate(3) | json}}", "{{{{}}}}", "}}{{", "{{trigger.text|npub}}"} {
		f.Add(s, "user {{trigger.text}} text")
	}
	f.Fuzz(func(t *testing.T, tmpl, user string) {
		vars := map[string]any{"trigger": map[string]any{"text": user}, "steps": map[string]any{}}
		out := workflow.Expand(tmpl, vars)
		if !strings.Contains(tmpl, "{{") && out != tmpl {
			t.Fatalf("literal text changed: %q → %q", tmpl, out)
		}
		// The user's text is substituted verbatim, never expanded.
		if tmpl == "{{trigger.text}}" && out != user {
			t.Fatalf("user text %q came out as %q", user, out)
		}
	})
}

// FuzzParse: parsing arbitrary input never panics, every refusal is a
// *FieldError, nothing with an anchor or alias is accepted, and whatever
// parses survives its canonical JSON unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte("name: Echo\ntrigger: {on: message_posted, filter: 'str_contains(trigger_text, \"ping\")'}\nsteps:\n  - id: reply\n    action: send_message\n    text: \"pong {{trigger.text}}\"\n"))
	f.Add([]byte("name: x\ntrigger: {on: webhook}\nsteps: [{id: a, action: delay, duration: 5s}, {id: b, depends_on: [a], if: 'steps_a_output_waited_secs > 1', action: send_message, text: hi}]\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("{"))
	f.Add(billionLaughs(2 << 10))
	f.Add([]byte("name: &n x\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: *n}]\n"))
	f.Add([]byte("name: x\ntrigger: {on: webhook}\nsteps: [{<<: {action: delay}, id: a, duration: 5}]\n"))
	f.Add([]byte("[" + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "]"))
	e, err := workflow.New(nopStore{}, nopSource{}, nopPub{}, workflow.WithAuthority(allMembers{}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := e.Parse(src)
		if err != nil {
			var fe *workflow.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("refusal %T %v is not a *FieldError", err, err)
			}
			return
		}
		var root yaml.Node
		if yaml.Unmarshal(src, &root) == nil && hasAnchor(&root) {
			t.Fatalf("a definition with an anchor or alias was accepted:\n%s", src)
		}
		d2, err := workflow.DecodeJSON(d.CanonicalJSON(), e.Actions())
		if err != nil {
			t.Fatalf("canonical JSON of a parsed definition does not decode: %v\n%s", err, d.CanonicalJSON())
		}
		if d2.Hash() != d.Hash() {
			t.Fatalf("canonical JSON not stable:\n%s\n%s", d.CanonicalJSON(), d2.CanonicalJSON())
		}
	})
}

func hasAnchor(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return true
	}
	for _, c := range n.Content {
		if hasAnchor(c) {
			return true
		}
	}
	return false
}
