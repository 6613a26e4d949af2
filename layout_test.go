package buzz

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPackageLayout checks the import rules the package doc comments state:
// no package depends, directly or through another package, on what its
// doc comment says it must not import, and no example imports an internal
// package (an embedder could not).
func TestPackageLayout(t *testing.T) {
	const m = "github.com/buzzrelay/buzz"
	var (
		relay    = []string{m}
		drivers  = []string{"github.com/redis/", "github.com/jackc/", "modernc.org/sqlite"}
		redis    = []string{"github.com/redis/", m + "/pubsub/redis"}
		backends = []string{m + "/store/embedded", m + "/store/embedded/", m + "/store/postgres"}
		allBuzz  = []string{m, m + "/"}
		// Test helpers and examples: no shipped package builds on them.
		testOnly = []string{m + "/examples/", m + "/internal/testenv", m + "/store/storetest", m + "/store/postgres/pgtest",
			m + "/workflow/workflowtest", m + "/operator/optest", m + "/nip98/replaytest", m + "/ratelimit/ratelimittest", m + "/conformance",
			m + "/internal/doccheck", m + "/internal/relaytest", m + "/internal/rawclient",
			m + "/internal/observetest", m + "/internal/fakeclock", m + "/internal/tracetest"}
	)
	cat := func(lists ...[]string) []string {
		var all []string
		for _, l := range lists {
			all = append(all, l...)
		}
		return all
	}
	// The package (relative to the module) → what it must not depend on; an
	// entry ending in "/" forbids every package under it. Every package of
	// the module has a rule: a new package fails the test until it gets one.
	rules := map[string][]string{
		"":       cat(drivers, backends, redis),
		"tenant": allBuzz,
		"nip11":  allBuzz,
		// search parses the "search" of nostr's filters; nostr only carries it.
		"search":             cat(relay, drivers, []string{m + "/tenant", m + "/store", m + "/channel", m + "/ingest", m + "/pubsub"}),
		"internal/testenv":   allBuzz,
		"internal/ttlcache":  allBuzz,
		"internal/fakeclock": allBuzz,
		"internal/tracetest": cat(relay, drivers, backends, redis),
		"internal/apijson":   allBuzz,
		"internal/relaytest": redis, // black-box tests only: a relay over both backends
		// The relay's own internal tests use it: it must not build on the relay.
		"internal/observetest": allBuzz,
		"internal/rawclient":   cat(relay, drivers, backends, redis),
		"audit/audithttp":      cat(drivers, backends, redis),
		"internal/doccheck":    allBuzz, // tests of the documentation only
		"conformance/checker":  allBuzz,
		"audit":                cat(relay, drivers, []string{m + "/store", m + "/nostr", m + "/ingest", m + "/pubsub"}),
		"conformance/trace":    cat(relay, drivers, []string{m + "/store", m + "/nostr", m + "/conformance/checker"}),
		"nostr":                cat(relay, drivers, []string{m + "/tenant", m + "/store", m + "/search"}),
		"nostr/nip44":          cat(relay, drivers, []string{m + "/tenant"}),
		"nostr/nip59":          cat(relay, drivers, []string{m + "/tenant"}),
		"nostr/nip17":          cat(relay, drivers, []string{m + "/tenant"}),
		"channel":              cat(relay, drivers, []string{m + "/store", m + "/ingest", m + "/pubsub"}),
		"messaging":            cat(relay, drivers, backends, []string{m + "/channel", m + "/store", m + "/ingest", m + "/pubsub", m + "/tenant"}),
		"store":                cat(relay, drivers, backends, []string{m + "/ingest", m + "/pubsub"}),
		"store/storetest":      cat(relay, drivers, backends),
		// The embedded store composes its events engine (store/embedded/lsm)
		// with SQLite (everything else); the engine knows nothing above it.
		"store/embedded":          cat(relay, redis, []string{"github.com/jackc/", m + "/store/postgres", m + "/ingest", m + "/pubsub"}),
		"store/postgres":          cat(relay, redis, []string{"modernc.org/sqlite", m + "/store/embedded", m + "/store/embedded/", m + "/ingest", m + "/pubsub"}),
		"store/embedded/lsm":      cat(relay, drivers, redis, backends, []string{m + "/ingest", m + "/pubsub"}),
		"pubsub":                  cat(relay, drivers, []string{m + "/pubsub/redis", m + "/store", m + "/ingest"}),
		"pubsub/control":          cat(relay, drivers, []string{m + "/pubsub", m + "/pubsub/redis", m + "/store", m + "/nostr", m + "/ingest"}),
		"pubsub/redis":            cat(relay, backends, []string{"github.com/jackc/", "modernc.org/sqlite", m + "/store", m + "/ingest"}),
		"ingest":                  cat(relay, drivers, backends, redis),
		"workflow":                cat(relay, drivers, backends, []string{m + "/store", m + "/pubsub", m + "/ingest"}),
		"workflow/workflowtest":   cat(relay, drivers, backends),
		"relaykey":                cat(relay, drivers, []string{m + "/store", m + "/ingest", m + "/pubsub"}),
		"nip98":                   cat(relay, drivers, []string{m + "/store"}),
		"nip98/replaytest":        cat(relay, drivers, []string{m + "/store"}),
		"nip98/redisreplay":       cat(relay, backends, []string{m + "/store", m + "/pubsub"}),
		"ratelimit":               cat(relay, drivers, []string{m + "/store"}),
		"ratelimit/ratelimittest": cat(relay, drivers, []string{m + "/store"}),
		"ratelimit/redislimit":    cat(relay, backends, []string{m + "/store", m + "/pubsub"}),
		"operator":                cat(relay, drivers, backends),
		"operator/optest":         cat(relay, drivers, backends),
		"admin":                   cat(relay, drivers, backends),
		"apitoken":                cat(relay, drivers, backends, redis),
		"nip05":                   cat(drivers, backends, redis),
		"modhttp":                 cat(drivers, backends, redis),
		"apitoken/tokenhttp":      cat(drivers, backends, redis),
		"homepage":                cat(drivers, backends, redis),
		"threads":                 cat(drivers, backends, redis),
		"httpapi":                 cat(drivers, backends, redis),
		"workflowhost":            cat(drivers, backends, redis),
		"cluster":                 cat(backends, []string{"github.com/jackc/", "modernc.org/sqlite"}),
		// transfer works over interfaces of its own: the backends implement
		// them, embedders call it with any store.
		"transfer":                 cat(relay, drivers, backends, redis, []string{m + "/ingest", m + "/pubsub"}),
		"nip77":                    cat(relay, drivers, backends, redis, []string{m + "/store", m + "/ingest", m + "/pubsub", m + "/channel", m + "/tenant"}),
		"metrics":                  cat(relay, drivers, []string{m + "/store"}),
		"safehttp":                 cat(relay, drivers, []string{m + "/store", m + "/workflow", m + "/nostr", m + "/tenant"}),
		"examples/internal/wstest": cat(relay, drivers, []string{m + "/store", m + "/tenant"}),
		"examples/minimal":         cat(redis, []string{"github.com/jackc/"}),
		"cmd/buzzcheck":            cat(relay, []string{m + "/tenant", m + "/conformance/trace"}),
		"cmd/buzzseed":             relay,
		"store/postgres/pgtest":    relay,
		"cmd/buzzbench":            cat(relay, []string{m + "/store", m + "/tenant"}),
		"cmd/buzzd":                testOnly,
		"conformance":              cat(drivers, redis, backends, []string{m + "/examples/"}),
		"examples/cluster":         testOnly,
		"examples/frontend":        testOnly,
		"examples/multihost":       testOnly,
		"examples/policies":        testOnly,
		"examples/workflows":       testOnly,
	}

	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", m+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 {
			t.Fatalf("go list line %q", line)
		}
		path, imports, deps := parts[0], strings.Fields(parts[1]), strings.Fields(parts[2])
		rel := strings.TrimPrefix(strings.TrimPrefix(path, m), "/")
		if strings.HasPrefix(rel, "examples/") && !strings.HasPrefix(rel, "examples/internal/") {
			for _, imp := range imports {
				if strings.Contains(imp+"/", "/internal/") {
					t.Errorf("example %s imports %s: examples use public packages only", rel, imp)
				}
			}
		}
		forbidden, ok := rules[rel]
		if !ok {
			t.Errorf("package %q has no import rule: add one to rules", rel)
			continue
		}
		seen[rel] = true
		for _, dep := range deps {
			for _, f := range forbidden {
				if dep == f || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) {
					t.Errorf("package %q depends on %s, which its doc comment says it must not import", rel, dep)
				}
			}
		}
	}
	for rel := range rules {
		if !seen[rel] {
			t.Errorf("rule for %q names no package", rel)
		}
	}
}
