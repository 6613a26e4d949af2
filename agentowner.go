package buzz

import (
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
)

// recordAgentOwner records the owner an accepted AUTH event attests (an
// auth tag, NIP-OA) as the owner of its pubkey, an agent, in this
// connection's community: the owner may then edit the agent's messages.
// The attestation is judged against the AUTH event's created_at; the first
// owner recorded for an agent stays. In a members-only community the owner
// must be a member. As in Buzz, an attestation that does not hold is
// ignored (logged): the authentication itself stands. It runs before the
// AUTH's OK, so the owner is on record once the client sees it.
func (c *conn) recordAgentOwner(ev *nostr.Event) {
	tag, ok := messaging.OwnerAttestationOf(ev)
	owners := agentOwnerStore(c.r.cfg.store)
	if !ok || owners == nil {
		return
	}
	a, err := messaging.ParseOwnerAttestation(tag)
	if err == nil {
		err = a.Verify(c.r.cfg.verifier, ev.PubKey, ev.CreatedAt)
	}
	if err != nil {
		c.log.InfoContext(c.ctx, "buzz: owner attestation ignored", "agent", ev.PubKey, "err", err)
		return
	}
	community := c.tc.Community()
	if rc := c.r.channels; rc != nil {
		pol, err := rc.access.Policy(c.ctx, community)
		if err != nil {
			c.log.ErrorContext(c.ctx, "buzz: owner attestation: access policy", "err", err)
			return
		}
		if pol == channel.AccessMembers {
			member, err := rc.access.IsCommunityMember(c.ctx, community, a.Owner)
			if err != nil || !member {
				c.log.InfoContext(c.ctx, "buzz: owner attestation ignored: the owner is not a member", "agent", ev.PubKey, "err", err)
				return
			}
		}
	}
	got, _, err := owners.RecordAgentOwner(c.ctx, community, ev.PubKey, a.Owner, c.r.cfg.now())
	switch {
	case err != nil:
		c.log.ErrorContext(c.ctx, "buzz: record agent owner", "agent", ev.PubKey, "err", err)
	case got.Owner != a.Owner:
		c.log.InfoContext(c.ctx, "buzz: owner attestation ignored: the agent has another owner on record", "agent", ev.PubKey)
	}
}
