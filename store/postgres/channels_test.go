package postgres_test

import (
	"testing"

	"github.com/buzzrelay/buzz/store/storetest"
)

// TestChannels runs the channel conformance suite, each subtest on its own
// database.
func TestChannels(t *testing.T) {
	storetest.RunChannels(t, func(t *testing.T) storetest.ChannelBackend { return openStore(t) })
}

// TestModeration runs the moderation conformance suite, each subtest on
// its own database.
func TestModeration(t *testing.T) {
	storetest.RunModeration(t, func(t *testing.T) storetest.ModerationBackend { return openStore(t) })
}

func TestProfiles(t *testing.T) {
	storetest.RunProfiles(t, func(t *testing.T) storetest.ProfileBackend { return openStore(t) })
}

func TestNames(t *testing.T) {
	storetest.RunNames(t, func(t *testing.T) storetest.NameBackend { return openStore(t) })
}

func TestListings(t *testing.T) {
	storetest.RunListings(t, func(t *testing.T) storetest.ListingBackend { return openStore(t) })
}

func TestReactions(t *testing.T) {
	storetest.RunReactions(t, func(t *testing.T) storetest.ReactionBackend { return openStore(t) })
}

func TestMessaging(t *testing.T) {
	storetest.RunMessaging(t, func(t *testing.T) storetest.MessagingBackend { return openStore(t) })
}

func TestReminders(t *testing.T) {
	storetest.RunReminders(t, func(t *testing.T) storetest.ReminderBackend { return openStore(t) })
}
