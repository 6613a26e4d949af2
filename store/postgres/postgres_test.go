package postgres_test

import (
	"testing"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/storetest"
)

// TestConformance runs the shared store suite, each subtest on its own
// database cloned from the migrated template.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Backend { return openStore(t) })
}
