package doccheck

import (
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestEmbeddingExamples compiles every Go example of docs/embedding.md
// against the module's packages as they are: each block becomes a package
// main of its own (a func main added when it has none), handed to go build
// through an overlay, so nothing is written into the repository.
func TestEmbeddingExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build over the examples")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(raw), -1)
	if len(blocks) < 5 {
		t.Fatalf("found %d Go examples in docs/embedding.md", len(blocks))
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	replace := map[string]string{}
	var pkgs []string
	for i, b := range blocks {
		src := b[1]
		if !strings.HasPrefix(src, "package main\n") {
			t.Errorf("example %d does not start with package main", i+1)
			continue
		}
		if !strings.Contains(src, "\nfunc main()") {
			src += "\nfunc main() {}\n"
		}
		file := filepath.Join(tmp, fmt.Sprintf("example%d.go", i+1))
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := fmt.Sprintf("internal/doccheck/embedding_example_%d", i+1)
		replace[filepath.Join(root, dir, "main.go")] = file
		pkgs = append(pkgs, "./"+dir)
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"build", "-overlay", ov}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go build of the examples of docs/embedding.md: %v\n%s", err, out)
	}
}

// TestEmbeddingExamplesFormatted keeps the Go examples of
// docs/embedding.md as gofmt writes them.
func TestEmbeddingExamplesFormatted(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(raw), -1)
	if len(blocks) == 0 {
		t.Fatal("no Go example in docs/embedding.md")
	}
	for i, b := range blocks {
		got, err := format.Source([]byte(b[1]))
		if err != nil {
			t.Errorf("example %d: %v", i+1, err)
			continue
		}
		if string(got) != b[1] {
			t.Errorf("example %d is not gofmt-formatted; gofmt gives:\n%s", i+1, got)
		}
	}
}
