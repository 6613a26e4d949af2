package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// Presence statuses a client may announce (kind 20001). StatusOffline clears
// the key instead of storing it.
const (
	StatusOnline  = "online"
	StatusAway    = "away"
	StatusOffline = "offline"
)

const maxStatusLen = 64

func (b *Broker) presenceKey(c tenant.CommunityID, pubkey string) string {
	return b.cfg.namespace + ":" + c.String() + ":presence:" + pubkey
}

func checkPresenceArgs(c tenant.CommunityID, pubkey string) error {
	if c.IsZero() {
		return errors.New("pubsub/redis: presence needs a community")
	}
	if !nostr.IsLowerHex(pubkey, 64) {
		return errors.New("pubsub/redis: presence pubkey must be 64 lowercase hex characters")
	}
	return nil
}

// SetPresence records pubkey's status in community for ttl
// (SET {ns}:{community}:presence:{pubkey} status EX ttl; ttl <= 0 means 180 s,
// rounded up to whole seconds). StatusOffline deletes the key instead. The
// status is 1–64 bytes.
func (b *Broker) SetPresence(ctx context.Context, community tenant.CommunityID, pubkey, status string, ttl time.Duration) error {
	if err := checkPresenceArgs(community, pubkey); err != nil {
		return err
	}
	if status == StatusOffline {
		return b.ClearPresence(ctx, community, pubkey)
	}
	if status == "" || len(status) > maxStatusLen {
		return fmt.Errorf("pubsub/redis: presence status must be 1-%d bytes", maxStatusLen)
	}
	if ttl <= 0 {
		ttl = DefaultPresenceTTL
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	cmd := b.client.B().Set().Key(b.presenceKey(community, pubkey)).Value(status).ExSeconds(secs).Build()
	if err := b.client.Do(ctx, cmd).Error(); err != nil {
		return fmt.Errorf("pubsub/redis: set presence: %w", err)
	}
	return nil
}

// ClearPresence deletes pubkey's presence in community; the relay calls it
// when the pubkey's last connection in that community closes.
func (b *Broker) ClearPresence(ctx context.Context, community tenant.CommunityID, pubkey string) error {
	if err := checkPresenceArgs(community, pubkey); err != nil {
		return err
	}
	if err := b.client.Do(ctx, b.client.B().Del().Key(b.presenceKey(community, pubkey)).Build()).Error(); err != nil {
		return fmt.Errorf("pubsub/redis: clear presence: %w", err)
	}
	return nil
}

// Presence returns the recorded status of each of pubkeys in community that
// has one (at most 1,000 pubkeys per call).
func (b *Broker) Presence(ctx context.Context, community tenant.CommunityID, pubkeys []string) (map[string]string, error) {
	if len(pubkeys) > 1000 {
		return nil, errors.New("pubsub/redis: at most 1000 pubkeys per presence lookup")
	}
	out := make(map[string]string, len(pubkeys))
	if len(pubkeys) == 0 {
		return out, nil
	}
	keys := make([]string, len(pubkeys))
	for i, pk := range pubkeys {
		if err := checkPresenceArgs(community, pk); err != nil {
			return nil, err
		}
		keys[i] = b.presenceKey(community, pk)
	}
	vals, err := b.client.Do(ctx, b.client.B().Mget().Key(keys...).Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("pubsub/redis: get presence: %w", err)
	}
	for i, v := range vals {
		if s, err := v.ToString(); err == nil && i < len(pubkeys) {
			out[pubkeys[i]] = s
		}
	}
	return out, nil
}
