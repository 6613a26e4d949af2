package control

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

type mapDirectory map[string]tenant.CommunityID

func (m mapDirectory) LookupHost(_ context.Context, h string) (tenant.CommunityID, error) {
	if id, ok := m[h]; ok {
		return id, nil
	}
	return tenant.CommunityID{}, tenant.ErrUnmappedHost
}

func TestNewArchiveFenceRefusesBadArguments(t *testing.T) {
	if _, err := NewArchiveFence(nil, time.Second); err == nil {
		t.Fatal("nil directory accepted")
	}
	for _, ttl := range []time.Duration{0, -time.Second} {
		if _, err := NewArchiveFence(mapDirectory{}, ttl); err == nil {
			t.Fatalf("fence duration %v accepted", ttl)
		}
	}
	if _, err := NewDisconnector(nil); err == nil {
		t.Fatal("nil relay accepted")
	}
}

func TestArchiveFence(t *testing.T) {
	a, b := tenant.NewCommunityID(), tenant.NewCommunityID()
	clock := time.Unix(1000, 0)
	f, err := NewArchiveFence(mapDirectory{"a.example": a, "b.example": b}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f.now = func() time.Time { return clock }
	ctx := context.Background()

	f.OnControl(a, MembershipChanged{})
	if id, err := f.LookupHost(ctx, "a.example"); err != nil || id != a {
		t.Fatalf("not fenced by other messages: %v %v", id, err)
	}
	f.OnControl(a, DisconnectCommunity{})
	if _, err := f.LookupHost(ctx, "a.example"); !errors.Is(err, tenant.ErrUnmappedHost) {
		t.Fatalf("fenced community resolves: %v", err)
	}
	if id, err := f.LookupHost(ctx, "b.example"); err != nil || id != b {
		t.Fatalf("another community is fenced: %v %v", id, err)
	}
	if _, err := f.LookupHost(ctx, "nowhere.example"); !errors.Is(err, tenant.ErrUnmappedHost) {
		t.Fatalf("unmapped host: %v", err)
	}
	clock = clock.Add(10 * time.Second)
	if id, err := f.LookupHost(ctx, "a.example"); err != nil || id != a {
		t.Fatalf("after the fence lapsed: %v %v", id, err)
	}
}

// TestArchiveFenceLiftedByUnarchive: an unarchive (HostsChanged without
// Archived) lifts the fence at once; an archive announced by HostsChanged
// fences like a disconnect; an alias change (AliasOnly) changes nothing.
func TestArchiveFenceLiftedByUnarchive(t *testing.T) {
	a := tenant.NewCommunityID()
	f, err := NewArchiveFence(mapDirectory{"a.example": a}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fenced := func() bool {
		t.Helper()
		id, err := f.LookupHost(ctx, "a.example")
		if err != nil && !errors.Is(err, tenant.ErrUnmappedHost) || err == nil && id != a {
			t.Fatalf("LookupHost = %v, %v", id, err)
		}
		return err != nil
	}

	f.OnControl(a, HostsChanged{Hosts: []string{"alias.example"}, AliasOnly: true})
	if fenced() {
		t.Fatal("an alias change fenced the community")
	}
	f.OnControl(a, HostsChanged{Hosts: []string{"a.example"}, Archived: true})
	if !fenced() {
		t.Fatal("archived (HostsChanged) community resolves")
	}
	f.OnControl(a, HostsChanged{Hosts: []string{"alias.example"}, AliasOnly: true})
	if !fenced() {
		t.Fatal("an alias change lifted the fence")
	}
	f.OnControl(a, HostsChanged{Hosts: []string{"a.example"}})
	if fenced() {
		t.Fatal("still fenced after unarchive")
	}
	f.OnControl(a, DisconnectCommunity{})
	f.OnControl(a, HostsChanged{Hosts: []string{"a.example"}})
	if fenced() {
		t.Fatal("still fenced after disconnect then unarchive")
	}
}

// invalidatingDirectory records Invalidate calls.
type invalidatingDirectory struct {
	mapDirectory
	forgot []string
}

func (d *invalidatingDirectory) Invalidate(host string) { d.forgot = append(d.forgot, host) }

func TestArchiveFenceInvalidatesTheCacheBehindIt(t *testing.T) {
	d := &invalidatingDirectory{mapDirectory: mapDirectory{}}
	f, err := NewArchiveFence(d, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f.Invalidate("a.example")
	if len(d.forgot) != 1 || d.forgot[0] != "a.example" {
		t.Fatalf("invalidated %v", d.forgot)
	}
	g, err := NewArchiveFence(mapDirectory{}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g.Invalidate("a.example") // a directory that does not cache: nothing to do
}

// recordingRelay records what a Disconnector asks of it.
type recordingRelay struct {
	published  []Message
	pubErr     error
	closed     []tenant.CommunityID
	disconnErr error
}

func (r *recordingRelay) PublishControl(_ context.Context, _ tenant.CommunityID, m Message) error {
	r.published = append(r.published, m)
	return r.pubErr
}

func (r *recordingRelay) DisconnectCommunity(_ context.Context, c tenant.CommunityID) error {
	r.closed = append(r.closed, c)
	return r.disconnErr
}

// TestDisconnectorErrors: a failed broadcast is reported only after this
// process's connections were closed; a local failure wins.
func TestDisconnectorErrors(t *testing.T) {
	c := tenant.NewCommunityID()
	busDown := errors.New("bus down")
	r := &recordingRelay{pubErr: busDown}
	d, err := NewDisconnector(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.DisconnectCommunity(context.Background(), c); !errors.Is(err, busDown) {
		t.Fatalf("broadcast failure: %v", err)
	}
	if len(r.published) != 1 || r.published[0] != (DisconnectCommunity{}) || len(r.closed) != 1 || r.closed[0] != c {
		t.Fatalf("published %v, closed %v", r.published, r.closed)
	}
	r.disconnErr = context.DeadlineExceeded
	if err := d.DisconnectCommunity(context.Background(), c); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("local failure: %v", err)
	}
}
