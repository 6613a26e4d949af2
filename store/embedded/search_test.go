package embedded_test

import (
	"testing"

	"github.com/buzzrelay/buzz/store/storetest"
)

func TestSearch(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) storetest.ChannelBackend { return openTemp(t) })
}
