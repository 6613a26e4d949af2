// Package tracetest checks in tests what a relay's conformance traces
// (conformance/trace) recorded, with the conformance checker. It builds on
// no relay package, so a test inside the relay's own package can use it.
package tracetest

import (
	"bytes"
	"testing"

	"github.com/buzzrelay/buzz/conformance/checker"
	"github.com/buzzrelay/buzz/conformance/trace"
)

// CheckTraces runs the conformance checker on every trace rec holds,
// failing the test on a violation or when there is none; with requireAll
// it also fails unless the traces exercised every action (but the
// checker's implementation-bug action). It returns the actions seen.
func CheckTraces(t testing.TB, rec *trace.Recorder, requireAll bool) map[string]bool {
	t.Helper()
	ck, err := checker.New()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	traces := rec.Traces()
	if len(traces) == 0 {
		t.Fatal("no trace recorded")
	}
	for _, tr := range traces {
		if rep := ck.CheckBytes(tr.JSONL); !rep.OK() {
			t.Errorf("trace of %s rejected: %v\n%s", tr.Host, rep.Violations, tr.JSONL)
		}
		for _, a := range checker.Actions() {
			if bytes.Contains(tr.JSONL, []byte(`"type":"`+a+`"`)) {
				seen[a] = true
			}
		}
	}
	if requireAll {
		for _, a := range checker.Actions() {
			if a != checker.ActionImplBug && !seen[a] {
				t.Errorf("the scenario never exercised %s", a)
			}
		}
	}
	return seen
}
