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

func TestConditionLinearity(t *testing.T) {
	for src, want := range map[string]bool{
		`str_contains(trigger_text, "a") && len(trigger_text) < 5 || !(trigger_author in ["x", "y"])`: true,
		`trigger.text == "a" ? steps.a.output.ok : false`:                                             true,
		`trigger_text + trigger_text == "aa"`:                                                         false,
		`trigger_list.exists(x, x == 1)`:                                                              false,
		`trigger_text.matches("a+")`:                                                                  false,
	} {
		p, err := compileCondition(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if p.linear != want {
			t.Errorf("%s: linear %v, want %v", src, p.linear, want)
		}
	}
}
