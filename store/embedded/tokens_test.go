package embedded_test

import (
	"testing"

	"github.com/buzzrelay/buzz/store/storetest"
)

func TestAPITokens(t *testing.T) {
	storetest.RunAPITokens(t, func(t *testing.T) storetest.TokenBackend { return openTemp(t) })
}
