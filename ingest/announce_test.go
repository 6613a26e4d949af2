package ingest_test

import (
	"reflect"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/store/storetest"
)

func TestControlMessages(t *testing.T) {
	id := storetest.NewChannelID()
	open := channel.Channel{ID: id, Visibility: channel.VisibilityOpen}
	priv := channel.Channel{ID: id, Visibility: channel.VisibilityPrivate}
	s := id.String()
	for _, tc := range []struct {
		name string
		ch   channel.Change
		want []control.Message
	}{
		{"deleted", channel.Change{Channel: open, Deleted: true}, []control.Message{control.VisibilityChanged{Channel: s}}},
		{"open to private", channel.Change{Channel: priv, Metadata: true, BecamePrivate: true}, []control.Message{control.VisibilityChanged{Channel: s}}},
		{"removals", channel.Change{Channel: priv, Members: true, Revoked: []string{"a", "b"}},
			[]control.Message{control.MembershipChanged{Channel: s, PubKey: "a"}, control.MembershipChanged{Channel: s, PubKey: "b"}}},
		{"member added", channel.Change{Channel: priv, Members: true}, []control.Message{control.MembershipChanged{Channel: s}}},
		{"open metadata", channel.Change{Channel: open, Metadata: true}, []control.Message{control.MembershipChanged{Channel: s}}},
		{"private metadata", channel.Change{Channel: priv, Metadata: true}, nil},
		{"event deleted", channel.Change{Channel: open, DeletedEvent: "e"}, nil},
	} {
		if got := ingest.ControlMessages(tc.ch); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v, want %#v", tc.name, got, tc.want)
		}
	}
}
