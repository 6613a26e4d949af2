package postgres_test

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
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

// TestRestoreBatch runs the batch restore conformance suite.
func TestRestoreBatch(t *testing.T) {
	storetest.RunRestoreBatch(t, func(t *testing.T) storetest.RestoreBatchBackend { return openStore(t) })
}

func TestProjects(t *testing.T) {
	storetest.RunProjects(t, func(t *testing.T) (storetest.ProjectBackend, storetest.ProjectBackend) {
		url := pgtest.NewDatabase(t)
		a, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		b, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return a, b
	})
}

func TestDMs(t *testing.T) {
	storetest.RunDMs(t, func(t *testing.T) storetest.DMBackend { return openStore(t) })
}

func TestThreads(t *testing.T) {
	storetest.RunThreads(t, func(t *testing.T) storetest.ThreadBackend { return openStore(t) })
}

// TestMembershipAnnouncements runs the membership announcement suite, each
// subtest on its own database.
func TestMembershipAnnouncements(t *testing.T) {
	storetest.RunMembershipAnnouncements(t, func(t *testing.T) storetest.ChannelBackend { return openStore(t) })
}
