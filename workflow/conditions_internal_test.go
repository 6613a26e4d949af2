package workflow

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestConditions(t *testing.T) {
	vars := scope(map[string]any{"text": "Ping me", "author": "abc", "timestamp": float64(1700000000), "tags": []any{"a", "b"}},
		map[string]any{"call": map[string]any{"output": map[string]any{"status": float64(200), "body": "ok"}}})
	cases := []struct {
		src  string
		want bool
	}{
		{`str_contains(trigger_text, "Ping")`, true},
		{`starts_with(trigger_text, "Ping") && ends_with(trigger_text, "me")`, true},
		{`len(trigger_text) == 7 && len(trigger_tags) == 2`, true},
		{`trigger_author == "abc" || false`, true},
		{`trigger.text == "Ping me"`, true},
		{`steps_call_output_status == 200 && steps.call.output.body == "ok"`, true},
		{`trigger_timestamp > 1600000000`, true},
		{`str_contains(trigger_text, "pong")`, false},
	}
	for _, c := range cases {
		prg, err := compileCondition(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got, err := evalCondition(context.Background(), prg, vars)
		if err != nil || got != c.want {
			t.Errorf("%s = %v, %v; want %v", c.src, got, err, c.want)
		}
	}
	// Errors are contained: a missing variable, a non-boolean result.
	for _, src := range []string{`trigger_missing == 1`, `trigger_text`, `len(1)`} {
		prg, err := compileCondition(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if _, err := evalCondition(context.Background(), prg, vars); err == nil {
			t.Errorf("%s evaluated without error", src)
		}
	}
	// Size limit.
	if _, err := compileCondition(strings.Repeat("1 == 1 && ", 500) + "true"); err == nil {
		t.Error("a condition over 4 KiB was accepted")
	}
}

func TestConditionCostLimit(t *testing.T) {
	// Nested comprehensions over a large list: bounded by the cost limit,
	// not by patience.
	prg, err := compileCondition(`trigger_list.all(x, trigger_list.all(y, trigger_list.all(z, x + y + z >= 0)))`)
	if err != nil {
		t.Fatal(err)
	}
	list := make([]any, 300)
	for i := range list {
		list[i] = int64(i)
	}
	// Whichever bound is hit first (the cost limit normally, the 100 ms
	// deadline on a slow or race-instrumented build), evaluation stops.
	start := time.Now()
	_, err = evalCondition(context.Background(), prg, map[string]any{"trigger_list": list})
	if err == nil || !strings.Contains(err.Error(), "cost") && !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("expensive condition: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("expensive condition ran %v", d)
	}
}

// TestConditionCostChargesBytes: every function and operator that reads a
// string is charged by its length, so no condition path escapes the cost
// limit (str_contains once ran without cost tracking or deadline).
func TestConditionCostChargesBytes(t *testing.T) {
	text := strings.Repeat("a", 256<<10)
	vars := scope(map[string]any{"text": text, "tags": []any{"x", "y"}}, nil)
	minCost := uint64(len(text) / conditionBytesPerUnit)
	for _, src := range []string{
		`str_contains(trigger_text, "b")`,
		`starts_with(trigger_text, "b")`,
		`ends_with(trigger_text, "b")`,
		`len(trigger_text) == 0`,
		`size(trigger_text) == 0`,
		`trigger_text.size() == 0`,
		`trigger_text.contains("b")`,
		`trigger_text.startsWith("b")`,
		`trigger_text.endsWith("b")`,
		`trigger_text == "b"`,
		`trigger_text != "b" && false`,
		`trigger_text < "b" && false`,
		`trigger_text in ["b"]`,
		`trigger_text in trigger_tags`,
		`trigger_text in trigger`,
		`trigger.text == "b"`,
		`trigger["text"] == "b"`,
		`int(trigger_text) == 1`,
		`(trigger_text + "b") == "b"`,
		`trigger_text.matches("b")`,
		`bytes(trigger_text) == b"b"`,
		`[trigger_text].exists(x, str_contains(x, "b"))`,
	} {
		p, err := compileCondition(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		_, cost, _ := evalConditionIn(context.Background(), p, vars)
		if cost < minCost {
			t.Errorf("%s on %d bytes cost %d units, want at least %d", src, len(text), cost, minCost)
		}
	}
}

// TestConditionMaxSizeWorstCase: the largest condition made of the
// cheapest-to-write expensive calls stops at MaxConditionCost on a
// maximum-size message, whichever function it uses.
func TestConditionMaxSizeWorstCase(t *testing.T) {
	text := strings.Repeat("a", 256<<10)
	vars := scope(map[string]any{"text": text}, nil)
	for _, call := range []string{`str_contains(trigger_text, "ab")`, `len(trigger_text) == 1`, `ends_with(trigger_text, "b")`} {
		src := worstCondition(call)
		p, err := compileCondition(src)
		if err != nil {
			t.Fatalf("%d bytes of %s: %v", len(src), call, err)
		}
		_, cost, err := evalConditionIn(context.Background(), p, vars)
		if err == nil || !strings.Contains(err.Error(), "cost") || cost != MaxConditionCost {
			t.Errorf("%d bytes of %s: cost %d, %v; want stopped at %d", len(src), call, cost, err, MaxConditionCost)
		}
	}
}

// worstCondition repeats call joined by || up to MaxConditionBytes.
func worstCondition(call string) string {
	n := (MaxConditionBytes + 4) / (len(call) + 4)
	return strings.Repeat(call+" || ", n-1) + call
}

func TestConditionRefusesUnchargedConstructs(t *testing.T) {
	for _, src := range []string{
		`{trigger_text: 1}.size() == 1`,
		`trigger[trigger_text] == 1`,
		`trigger[?trigger_text].hasValue()`,
	} {
		if _, err := compileCondition(src); err == nil {
			t.Errorf("%s compiled", src)
		}
	}
	for _, src := range []string{`trigger["text"] == "a"`, `trigger_tags[0] == "a"`, `["a", "b"].exists(x, x == trigger_text)`} {
		if _, err := compileCondition(src); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
}
