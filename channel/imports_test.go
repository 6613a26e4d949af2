package channel_test

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestImports holds the package to its doc comment: of Buzz, it imports
// only nostr, tenant and internal packages (never store, ingest, pubsub or
// the root package).
func TestImports(t *testing.T) {
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/buzzrelay/buzz"
	allowed := func(p string) bool {
		return p == mod+"/nostr" || p == mod+"/tenant" || strings.HasPrefix(p, mod+"/internal/")
	}
	for _, f := range files {
		name := f.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if (p == mod || strings.HasPrefix(p, mod+"/")) && !allowed(p) {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}
