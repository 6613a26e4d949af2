package embedded_test

import (
	"testing"

	"github.com/buzzrelay/buzz/store/storetest"
)

func TestChannelTopic(t *testing.T) {
	storetest.RunChannelTopic(t, func(t *testing.T) storetest.TopicBackend { return openTemp(t) })
}
