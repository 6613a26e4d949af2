package workflow_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/workflow"
)

// billionLaughs returns a definition of about n bytes whose YAML nests
// aliases ten wide: expanded, it would be 10^levels scalars. Each level
// stays below the YAML decoder's own alias-ratio guard for small documents,
// which is what made it expensive; its long anchor names keep it within
// MaxDefinitionNodes separators, so the aliases are what refuses it.
func billionLaughs(n int) []byte {
	var b strings.Builder
	b.WriteString("name: x\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]\ndescription: &l000000000000 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; b.Len() < n-200; i++ {
		fmt.Fprintf(&b, "x%d: &l%012d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%012d", i-1)
		}
		b.WriteString("]\n")
	}
	return []byte(b.String())
}

// aliasFan returns a definition of about 60 KB whose aliases stay under the
// YAML decoder's own alias-ratio guard (few aliases, each expanding a large
// anchor): 1200 aliases of a 1000-element list, over a million scalars once
// expanded. Long anchor names keep it within MaxDefinitionNodes separators.
func aliasFan() []byte {
	name := strings.Repeat("n", 40)
	return []byte("name: x\ntrigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]\n" +
		"description: &" + name + " [" + strings.Repeat("lol, ", 999) + "lol]\n" +
		"fan: [" + strings.Repeat("*"+name+", ", 1199) + "*" + name + "]\n")
}

// worstDefinitions are inputs up to MaxDefinitionBytes built to make the
// parser work hardest: alias bombs, as many nodes and as deep nesting as
// the bounds let through, and just past them.
func worstDefinitions() map[string][]byte {
	max := workflow.MaxDefinitionBytes
	flowMap := func(keys int) []byte {
		return []byte("{" + strings.Repeat("a,", keys-1) + "a}")
	}
	return map[string][]byte{
		"billion laughs":          billionLaughs(60 << 10),
		"alias fan":               aliasFan(),
		"small alias bomb":        billionLaughs(2 << 10),
		"flow mapping at bound":   flowMap(workflow.MaxDefinitionNodes),
		"flow mapping past":       flowMap(max/2 - 2),
		"flow list past":          []byte("[" + strings.Repeat("a,", max/2-2) + "a]"),
		"deep flow nesting":       []byte(strings.Repeat("[", max/2) + strings.Repeat("]", max/2)),
		"deep block nesting":      []byte(strings.Repeat("- ", max/2-1) + "a"),
		"one long scalar":         []byte("name: " + strings.Repeat("x", max-10)),
		"long text of commas":     []byte("description: '" + strings.Repeat("a, ", max/3-8) + "'"),
		"alias bomb past bound":   []byte("a: &a [x]\nb: [" + strings.Repeat("*a,", max/3-8) + "*a]"),
		"many small documents":    []byte(strings.Repeat("---\n", max/4)),
		"block mapping at bound":  []byte(strings.Repeat("k: v\n", workflow.MaxDefinitionNodes-1)),
		"duplicate keys in bound": []byte(strings.Repeat("k: v\n", workflow.MaxDefinitionNodes/2-2)),
	}
}

func TestParseRefusesAnchorsAndAliases(t *testing.T) {
	lookup := builtins(t)
	for name, src := range map[string][]byte{
		"billion laughs": billionLaughs(60 << 10),
		"alias fan":      aliasFan(),
		"one alias": []byte(`name: &n x
trigger: {on: webhook}
steps: [{id: a, action: send_message, text: *n}]`),
		"merge key": []byte(`name: x
trigger: {on: webhook}
base: &b {action: send_message, text: hi}
steps: [{<<: *b, id: a}]`),
		"unused anchor": []byte(`name: &n x
trigger: {on: webhook}
steps: [{id: a, action: send_message, text: hi}]`),
	} {
		_, err := workflow.Parse(src, lookup)
		var fe *workflow.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "anchors and aliases are not allowed") {
			t.Errorf("%s: %v, want a field error refusing anchors and aliases", name, err)
		}
	}
}

func TestParseBoundsNodesAndDepth(t *testing.T) {
	lookup := builtins(t)
	steps := "trigger: {on: webhook}\nsteps: [{id: a, action: send_message, text: hi}]\n"
	for name, c := range map[string]struct {
		src, want string
	}{
		"too many nodes":   {"name: x\n" + steps + "description: [" + strings.Repeat("a,", workflow.MaxDefinitionNodes) + "a]", "more than 4096 YAML nodes"},
		"too many in text": {"name: x\n" + steps + "description: '" + strings.Repeat(",", workflow.MaxDefinitionNodes+1) + "'", "more than 4096 YAML nodes"},
		"too deep":         {"name: x\n" + steps + "description: " + strings.Repeat("[", workflow.MaxDefinitionDepth) + strings.Repeat("]", workflow.MaxDefinitionDepth), "nested more than 32 levels"},
	} {
		_, err := workflow.Parse([]byte(c.src), lookup)
		var fe *workflow.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// Just inside the bounds a definition parses (the description is not
	// a string, so it is refused by validation, not by the bounds).
	ok := "name: x\n" + steps + "description: " + strings.Repeat("[", workflow.MaxDefinitionDepth-2) + strings.Repeat("]", workflow.MaxDefinitionDepth-2)
	if _, err := workflow.Parse([]byte(ok), lookup); err == nil || strings.Contains(err.Error(), "nested") {
		t.Errorf("nesting within the bound: %v, want a validation error of description", err)
	}
	ok = "name: x\n" + steps + "description: '" + strings.Repeat("a, ", 1000) + "'"
	if _, err := workflow.Parse([]byte(ok), lookup); err != nil {
		t.Errorf("text with 1000 commas: %v", err)
	}
}

// TestParseWorstCaseCost: no input up to the maximum size makes parsing
// allocate more than a few MB or build more than a bounded number of
// objects (time follows allocation here: the parser does a constant
// amount of work per object it builds).
func TestParseWorstCaseCost(t *testing.T) {
	lookup := builtins(t)
	const (
		maxBytes  = 4 << 20
		maxAllocs = 60_000
	)
	for name, src := range worstDefinitions() {
		if len(src) > workflow.MaxDefinitionBytes {
			t.Fatalf("%s: %d bytes, more than the maximum", name, len(src))
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := workflow.Parse(src, lookup)
		runtime.ReadMemStats(&after)
		bytes := after.TotalAlloc - before.TotalAlloc
		allocs := testing.AllocsPerRun(1, func() { _, _ = workflow.Parse(src, lookup) })
		t.Logf("%-24s %6d bytes in: %8d bytes, %6.0f allocs, %v", name, len(src), bytes, allocs, err)
		if bytes > maxBytes || allocs > maxAllocs {
			t.Errorf("%s: parsing allocated %d bytes in %.0f allocations; the bound is %d bytes, %d allocations",
				name, bytes, allocs, maxBytes, maxAllocs)
		}
	}
}

// TestStoredDefinitionOutlivesStricterConditions: a stored definition whose
// condition the current rules refuse (a map literal) still loads from its
// canonical JSON, so its channel's other workflows keep working; validating
// it against the actions refuses it.
func TestStoredDefinitionOutlivesStricterConditions(t *testing.T) {
	j := []byte(`{"enabled":true,"name":"old","steps":[{"action":"send_message","id":"a","if":"{\"k\": trigger_text}.size() == 1","text":"hi"}],"trigger":{"filter":"trigger[trigger_text] == 1","on":"message_posted"}}`)
	d, err := workflow.DecodeJSON(j, nil)
	if err != nil || d.Trigger.Filter == "" || d.Steps[0].If == "" {
		t.Fatalf("stored definition: %v", err)
	}
	if _, err := workflow.DecodeJSON(j, builtins(t)); err == nil {
		t.Fatal("validated definition with refused conditions accepted")
	}
}
