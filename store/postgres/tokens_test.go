package postgres_test

import (
	"testing"

	"github.com/buzzrelay/buzz/store/storetest"
)

// TestAPITokens runs the API token conformance suite, each subtest on its
// own database.
func TestAPITokens(t *testing.T) {
	storetest.RunAPITokens(t, func(t *testing.T) storetest.TokenBackend { return openStore(t) })
}
