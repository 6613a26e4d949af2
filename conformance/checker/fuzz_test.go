package checker

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCheck: any input yields a report without panicking, and a report that
// accepts the trace has at least one step.
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(""))
	f.Add([]byte("{}\n[]\nnull\n"))
	ck, err := New(WithRequired(ActionAcceptEphemeral))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rep := ck.CheckBytes(b)
		if rep.OK() && (rep.Steps == 0 || !containsAction(b)) {
			t.Fatalf("accepted a trace without the required action: %q", b)
		}
	})
}

func containsAction(b []byte) bool {
	return bytes.Contains(b, []byte(`"accept_ephemeral"`))
}
