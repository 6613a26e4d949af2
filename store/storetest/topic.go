package storetest

import (
	"errors"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
)

// TopicBackend is a channel backend that implements
// store.ChannelTopicSetter.
type TopicBackend interface {
	ChannelBackend
	store.ChannelTopicSetter
}

// RunChannelTopic pins store.ChannelTopicSetter: the topic is the channel's
// about, other metadata is untouched, setting the same topic reports no
// change, and a deleted, unknown or other community's channel is
// ErrNoChannel and changes nothing.
func RunChannelTopic(t *testing.T, open func(t *testing.T) TopicBackend) {
	b := open(t)
	c := Community(t, b, "a.example")
	other := Community(t, b, "b.example")
	owner := NewAuthor(t)
	id := CreateChannel(t, b, c, owner, "general", channel.VisibilityOpen)

	ch, changed, err := b.SetChannelTopic(ctxb(), c, id, "release on friday")
	if err != nil || !changed || ch.About != "release on friday" || ch.Name != "general" || ch.ID != id {
		t.Fatalf("set = %+v, %v, %v", ch, changed, err)
	}
	got, err := b.Channel(ctxb(), c, id)
	if err != nil || got.About != "release on friday" || got.Name != "general" || got.Visibility != channel.VisibilityOpen {
		t.Fatalf("after set: %+v, %v", got, err)
	}
	if _, changed, err := b.SetChannelTopic(ctxb(), c, id, "release on friday"); err != nil || changed {
		t.Fatalf("same topic again: changed %v, %v", changed, err)
	}
	if _, _, err := b.SetChannelTopic(ctxb(), other, id, "hijack"); !errors.Is(err, channel.ErrNoChannel) {
		t.Fatalf("other community's channel: %v", err)
	}
	if _, _, err := b.SetChannelTopic(ctxb(), c, NewChannelID(), "x"); !errors.Is(err, channel.ErrNoChannel) {
		t.Fatalf("unknown channel: %v", err)
	}
	if got, _ := b.Channel(ctxb(), c, id); got.About != "release on friday" {
		t.Fatalf("a refused set changed the topic: %q", got.About)
	}
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindDeleteChannel, Channel: id})
	if _, _, err := b.SetChannelTopic(ctxb(), c, id, "x"); !errors.Is(err, channel.ErrNoChannel) {
		t.Fatalf("deleted channel: %v", err)
	}
}
