package control

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/tenant"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	c := tenant.NewCommunityID()
	for _, m := range []Message{
		MembershipChanged{Channel: "ch", PubKey: strings.Repeat("ab", 32)},
		MembershipChanged{},
		VisibilityChanged{Channel: "ch"},
		DisconnectPubkey{PubKey: strings.Repeat("cd", 32), Reason: "blocked: banned"},
		DisconnectCommunity{Reason: "restricted: archived"},
		HostsChanged{Hosts: []string{"a.example", "b.example:8080"}, Archived: true},
		HostsChanged{Hosts: []string{"a.example"}},
		HostsChanged{Hosts: []string{"alias.example"}, AliasOnly: true},
		PolicyChanged{Access: "members"},
		RestrictionChanged{PubKey: strings.Repeat("ef", 32), Banned: true},
	} {
		b, err := Encode(c, "pod1", m)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%s): %v", b, err)
		}
		if d.Community != c.String() || d.Origin != "pod1" || d.Type != m.Type() || !reflect.DeepEqual(d.Message, m) {
			t.Fatalf("round trip of %#v gave %#v", m, d)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	d, err := Decode([]byte(`{"v":1,"c":"x","o":"p","t":"from_the_future","m":{"a":1}}`))
	if !errors.Is(err, ErrUnknownType) || d.Type != "from_the_future" || d.Message != nil {
		t.Fatalf("unknown type: %#v, %v", d, err)
	}
	for _, bad := range []string{
		``, `[]`, `{"v":2,"t":"visibility_changed"}`,
		`{"v":1,"t":"visibility_changed","m":{"channel":5}}`,
		`{"v":1,"t":"disconnect_pubkey","m":[]}`,
	} {
		if _, err := Decode([]byte(bad)); err == nil || errors.Is(err, ErrUnknownType) {
			t.Fatalf("Decode(%q) = %v, want a malformed-envelope error", bad, err)
		}
	}
	if _, err := Encode(tenant.NewCommunityID(), "o", nil); err == nil {
		t.Fatal("nil message encoded")
	}
}

func TestLocal(t *testing.T) {
	var l Local
	c := tenant.NewCommunityID()
	var got []Message
	stop := l.ListenControl(func(cc tenant.CommunityID, m Message) {
		if cc != c {
			t.Errorf("community %v", cc)
		}
		got = append(got, m)
	})
	if err := l.PublishControl(context.Background(), c, DisconnectCommunity{}); err != nil {
		t.Fatal(err)
	}
	stop()
	stop()
	_ = l.PublishControl(context.Background(), c, DisconnectCommunity{})
	if len(got) != 1 {
		t.Fatalf("got %d deliveries, want 1", len(got))
	}
	if l.PublishControl(context.Background(), tenant.CommunityID{}, DisconnectCommunity{}) == nil ||
		l.PublishControl(context.Background(), c, nil) == nil {
		t.Fatal("invalid publish accepted")
	}
}

var _ Bus = (*Local)(nil)
