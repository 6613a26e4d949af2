package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

var fixtures = filepath.Join("..", "..", "conformance", "checker", "testdata")

func fixture(name string) string { return filepath.Join(fixtures, name) }

func TestRun(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		stdin  string
		status int
		out    string
	}{
		{"good", []string{fixture("good.jsonl")}, "", 0, "ok (14 steps)"},
		{"required present", []string{"-require", "write_insert,read_host_feed_rows", fixture("good.jsonl")}, "", 0, "ok"},
		{"required absent", []string{"-require", "write_insert", fixture("bad_foreign_row_leak.jsonl")}, "", 1, "CoverageBreach"},
		{"leak", []string{fixture("good.jsonl"), fixture("bad_foreign_row_leak.jsonl")}, "", 1, "NonInterference"},
		{"host/channel mismatch", []string{fixture("bad_host_channel_mismatch.jsonl")}, "", 1, "IllegalTransition"},
		{"coverage", []string{fixture("bad_coverage_breach.jsonl")}, "", 1, "CoverageBreach"},
		{"state", []string{fixture("bad_state_mismatch.jsonl")}, "", 1, "StateMismatch"},
		{"stdin empty", []string{"-"}, "", 1, "empty trace"},
		{"no args", nil, "", 2, ""},
		{"missing file", []string{fixture("nope.jsonl")}, "", 2, ""},
		{"unknown required", []string{"-require", "nope", fixture("good.jsonl")}, "", 2, ""},
		{"bad flag", []string{"-x"}, "", 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(c.args, strings.NewReader(c.stdin), &out, &errOut)
			if got != c.status {
				t.Fatalf("status %d, want %d; stdout %q stderr %q", got, c.status, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), c.out) {
				t.Fatalf("stdout %q lacks %q", out.String(), c.out)
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if got := run([]string{"-json", fixture("good.jsonl"), fixture("bad_foreign_row_leak.jsonl")}, nil, &out, &errOut); got != 1 {
		t.Fatalf("status %d: %s", got, errOut.String())
	}
	dec := json.NewDecoder(&out)
	var res []fileResult
	for dec.More() {
		var r fileResult
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if len(res) != 2 || !res[0].OK || res[1].OK || len(res[1].Violations) != 1 || res[1].Violations[0].Verdict != "NonInterference" {
		t.Fatalf("results %+v", res)
	}
}
