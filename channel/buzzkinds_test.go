package channel_test

import (
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
)

// TestBuzzMessagesRequireChannel: every channel message kind of package
// messaging needs its h tag, as a chat message does.
func TestBuzzMessagesRequireChannel(t *testing.T) {
	for kind := 0; kind <= nostr.MaxKind; kind++ {
		if messaging.IsChannelMessage(kind) && !channel.RequiresChannel(kind) {
			t.Fatalf("kind %d is a channel message but does not require a channel", kind)
		}
	}
	if channel.RequiresChannel(messaging.KindReaction) || channel.RequiresChannel(40009) || channel.RequiresChannel(40001) {
		t.Fatal("a kind outside 40002–40008 requires a channel")
	}
}
