package ratelimit_test

import (
	"testing"

	"github.com/buzzrelay/buzz/ratelimit"
	"github.com/buzzrelay/buzz/ratelimit/ratelimittest"
)

func TestMemoryConformance(t *testing.T) {
	ratelimittest.Run(t, func(tiers ratelimit.Tiers) ratelimit.Limiter {
		l, err := ratelimit.NewMemory(tiers)
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
}
