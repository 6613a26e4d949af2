package nip98_test

import (
	"testing"

	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nip98/replaytest"
)

func TestMemoryGuardConformance(t *testing.T) {
	g, err := nip98.NewMemoryGuard(1000)
	if err != nil {
		t.Fatal(err)
	}
	replaytest.Run(t, g)
}
