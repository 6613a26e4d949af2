package workflow_test

import (
	"context"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

type nopSource struct{}

func (nopSource) Subscribe(ctx context.Context, _ func(context.Context, tenant.CommunityID, *nostr.Event) error) error {
	<-ctx.Done()
	return ctx.Err()
}

type nopPub struct{}

func (nopPub) Sign(context.Context, tenant.CommunityID, *nostr.Event) error    { return nil }
func (nopPub) Publish(context.Context, tenant.CommunityID, *nostr.Event) error { return nil }

type allMembers struct{}

func (allMembers) ChannelRole(context.Context, tenant.CommunityID, channel.ID, string) (channel.Role, bool, error) {
	return channel.RoleMember, true, nil
}

func newTestEngine(t *testing.T, opts ...workflow.Option) *workflow.Engine {
	t.Helper()
	e, err := workflow.New(nopStore{}, nopSource{}, nopPub{}, append([]workflow.Option{workflow.WithAuthority(allMembers{})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// nopStore satisfies workflow.Store for tests that never touch storage.
type nopStore struct{ workflow.Store }
