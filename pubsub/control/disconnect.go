package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/buzzrelay/buzz/tenant"
)

// Relay is the part of a relay process a Disconnector drives; *buzz.Relay
// implements it.
type Relay interface {
	// PublishControl delivers m to every process serving community, this
	// one included.
	PublishControl(ctx context.Context, community tenant.CommunityID, m Message) error
	// DisconnectCommunity closes this process's connections bound to
	// community and waits until they are closed.
	DisconnectCommunity(ctx context.Context, community tenant.CommunityID) error
}

// Disconnector closes a community's connections on every process of a
// deployment, for example when it is archived (it implements the operator
// API's operator.Disconnector). Over a Local bus it closes this process's.
type Disconnector struct {
	relay Relay
}

// NewDisconnector returns a Disconnector that broadcasts through relay.
func NewDisconnector(relay Relay) (*Disconnector, error) {
	if relay == nil {
		return nil, errors.New("control: NewDisconnector: nil relay")
	}
	return &Disconnector{relay: relay}, nil
}

// DisconnectCommunity broadcasts DisconnectCommunity (the other processes
// close their connections asynchronously, as they receive it) and waits
// until this process's connections of community are closed. An error from
// the broadcast, returned after this process's connections are closed,
// means other processes may keep theirs open; ctx's error means this
// process's may not all be closed.
func (d *Disconnector) DisconnectCommunity(ctx context.Context, community tenant.CommunityID) error {
	err := d.relay.PublishControl(ctx, community, DisconnectCommunity{})
	if lerr := d.relay.DisconnectCommunity(ctx, community); lerr != nil {
		return lerr
	}
	if err != nil {
		return fmt.Errorf("control: broadcast disconnect: %w", err)
	}
	return nil
}
