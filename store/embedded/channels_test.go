package embedded_test

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
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

func TestReactionSlots(t *testing.T) {
	type opened struct {
		dir    string
		closed bool
	}
	all := map[store.Backend]*opened{}
	open := func(t *testing.T, dir string) store.Backend {
		s, err := embedded.Open(context.Background(), dir)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		o := &opened{dir: dir}
		all[s] = o
		t.Cleanup(func() {
			if !o.closed {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
		})
		return s
	}
	reopen := func(t *testing.T, b store.Backend) store.Backend {
		o := all[b]
		o.closed = true
		if err := b.(*embedded.Store).Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return open(t, o.dir)
	}
	storetest.RunReactionSlots(t, func(t *testing.T) store.Backend { return open(t, t.TempDir()) }, reopen)
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
