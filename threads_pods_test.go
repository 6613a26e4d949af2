package buzz

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
)

// TestThreadCountsAcrossPods: replies and their deletions sent at once to
// two relays sharing one PostgreSQL database leave the thread's counters
// exact, as either pod reads them.
func TestThreadCountsAcrossPods(t *testing.T) {
	url := pgtest.NewDatabase(t)
	open := func() store.Backend {
		st, err := postgres.Open(context.Background(), url, postgres.WithLogger(quietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	const host = "threads.example"
	pods := []*pod{startPod(t, open(), host), startPod(t, open(), host)}
	owner := newSigner(t)
	oc := pods[0].dial(t)
	oc.AuthAs(owner, host)
	ch := oc.createChannel(owner, "lobby", channel.VisibilityOpen)
	h := nostr.Tag{"h", ch.String()}
	root := owner.Event(nostr.KindChatMessage, now(), "root", h)
	oc.MustAccept(root)

	const writers, each = 8, 4
	var wg sync.WaitGroup
	for w := range writers {
		s := newSigner(t)
		c := pods[w%2].dial(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ev := s.Event(nostr.KindChatMessage, now(), fmt.Sprint("reply ", i), h, nostr.Tag{"e", root.ID, "", "reply"})
				if ok := c.PublishOnce(ev); !ok.OK {
					t.Errorf("reply: %s", ok.Message)
					return
				}
				if i%2 == 1 {
					if ok := c.PublishOnce(s.Event(nostr.KindDeletion, now(), "", nostr.Tag{"e", ev.ID})); !ok.OK {
						t.Errorf("deletion: %s", ok.Message)
					}
				}
			}
		}()
	}
	wg.Wait()
	want := int64(writers * each / 2)
	for _, p := range pods {
		sum, err := p.st.(store.ThreadStore).ThreadSummary(context.Background(), p.tc.Community(), root.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sum.ReplyCount != want || sum.DescendantCount != want || len(sum.Participants) != min(writers, store.MaxThreadParticipants) {
			t.Fatalf("summary = %+v, want %d replies", sum, want)
		}
	}
}
