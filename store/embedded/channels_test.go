package embedded_test

import (
	"testing"

	"github.com/buzzrelay/buzz/store/storetest"
)

func TestChannels(t *testing.T) {
	storetest.RunChannels(t, func(t *testing.T) storetest.ChannelBackend { return openTemp(t) })
}

func TestModeration(t *testing.T) {
	storetest.RunModeration(t, func(t *testing.T) storetest.ModerationBackend { return openTemp(t) })
}

func TestProfiles(t *testing.T) {
	storetest.RunProfiles(t, func(t *testing.T) storetest.ProfileBackend { return openTemp(t) })
}

func TestNames(t *testing.T) {
	storetest.RunNames(t, func(t *testing.T) storetest.NameBackend { return openTemp(t) })
}

func TestListings(t *testing.T) {
	storetest.RunListings(t, func(t *testing.T) storetest.ListingBackend { return openTemp(t) })
}

func TestReactions(t *testing.T) {
	storetest.RunReactions(t, func(t *testing.T) storetest.ReactionBackend { return openTemp(t) })
}

func TestMessaging(t *testing.T) {
	storetest.RunMessaging(t, func(t *testing.T) storetest.MessagingBackend { return openTemp(t) })
}

func TestReminders(t *testing.T) {
	storetest.RunReminders(t, func(t *testing.T) storetest.ReminderBackend { return openTemp(t) })
}

func TestProjects(t *testing.T) {
	storetest.RunProjects(t, func(t *testing.T) (storetest.ProjectBackend, storetest.ProjectBackend) {
		s := openTemp(t)
		return s, s
	})
}

func TestDMs(t *testing.T) {
	storetest.RunDMs(t, func(t *testing.T) storetest.DMBackend { return openTemp(t) })
}

func TestThreads(t *testing.T) {
	storetest.RunThreads(t, func(t *testing.T) storetest.ThreadBackend { return openTemp(t) })
}

func TestMembershipAnnouncements(t *testing.T) {
	storetest.RunMembershipAnnouncements(t, func(t *testing.T) storetest.ChannelBackend { return openTemp(t) })
}
