package doccheck

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/workflow"
	"github.com/buzzrelay/buzz/workflowhost"
)

// TestWorkflowExamples parses every YAML example of docs/workflows.md with
// the engine buzzd runs (every built-in action configured): a whole
// definition as it is, a trigger with a step added, a step (or list of
// steps) inside a definition triggered by messages.
func TestWorkflowExamples(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "workflows.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(raw), -1)
	if len(blocks) < 10 {
		t.Fatalf("found %d YAML examples in docs/workflows.md, want every trigger's and action's", len(blocks))
	}
	eng := engine(t)
	for i, b := range blocks {
		src := b[1]
		switch {
		case strings.HasPrefix(src, "name:"):
		case strings.HasPrefix(src, "trigger:"):
			src = "name: Example\n" + src + "steps:\n  - {id: s, action: send_message, text: hi}\n"
		case strings.HasPrefix(src, "- "):
			src = "name: Example\ntrigger: {on: message_posted}\nsteps:\n" + indent(src)
		default:
			t.Errorf("example %d is neither a definition, a trigger nor a step:\n%s", i+1, src)
			continue
		}
		if _, err := eng.Parse([]byte(src)); err != nil {
			t.Errorf("example %d does not parse: %v\n%s", i+1, err, src)
		}
	}
	// The check refuses what the engine refuses, so the examples above
	// were really parsed.
	if _, err := eng.Parse([]byte("name: Bad\ntrigger: {on: message_posted}\nsteps:\n  - {id: s, action: add_reaction}\n")); err == nil {
		t.Error("a step without its required field parsed")
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// engine returns the workflow engine of a relay wired as buzzd wires it,
// on an embedded store in a temporary directory.
func engine(t *testing.T) *workflow.Engine {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	wf, err := workflowhost.New(st)
	if err != nil {
		t.Fatal(err)
	}
	relay, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithChannels(), buzz.WithFeature(wf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Shutdown(context.Background()) })
	return wf.Engine()
}
