// Package ratelimit admits or refuses actions per (community, pubkey, class)
// with sliding-window limits whose size depends on the actor's tier.
//
// Memory is the limiter of a single process; redislimit.Limiter (package
// ratelimit/redislimit) is shared by every pod of a deployment, so a
// pubkey's usage on one pod counts on all of them. The Redis limiter lives in
// its own package so that a single-process embedder does not link the Redis
// client; package ratelimit depends on tenant only and must not import Redis,
// the relay (package buzz) or a store. Package ratelimittest is the
// conformance suite every Limiter passes.
//
// A limiter that cannot decide (Redis unreachable) returns an error wrapping
// ErrUnavailable: the caller must refuse the action with that error's text,
// never let it through unlimited.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// Class is the kind of action being limited.
type Class string

// Classes of action.
const (
	ClassMessage Class = "msg" // EVENTs published
	ClassAPI     Class = "api" // HTTP API calls
	ClassWS      Class = "ws"  // WebSocket frames (admission)
	// ClassEvent counts EVENT messages received over WebSocket, stored or
	// ephemeral: the relay's admission limit per (community, pubkey).
	ClassEvent Class = "ws_event"
)

// Tier is an actor's service level; it selects the rules applied.
type Tier string

// Tiers of actors. The zero Tier means TierHuman.
const (
	TierHuman         Tier = "human"
	TierAgent         Tier = "agent"
	TierAgentElevated Tier = "agent_elevated"
	TierPlatform      Tier = "platform"
)

// Key identifies one rate-limited stream of actions. Tier selects the rule
// but is not part of the identity: changing an actor's tier keeps its usage.
type Key struct {
	Community tenant.CommunityID
	PubKey    string // 64 lowercase hex
	Class     Class
	Tier      Tier // "" = TierHuman
}

// Rule allows Limit actions in any sliding Window.
type Rule struct {
	Limit  int
	Window time.Duration
}

// Tiers holds the rule of every (tier, class). A class missing from a tier
// falls back to TierHuman's rule for that class.
type Tiers map[Tier]map[Class]Rule

// DefaultTiers returns the reference limits: messages 60/120/300/600 per
// minute for human/agent/agent_elevated/platform, API calls 300/600/600/600
// per minute, WebSocket frames and WebSocket EVENTs 50 per 5 s (10/s) for
// everyone.
func DefaultTiers() Tiers {
	ws := Rule{Limit: 50, Window: 5 * time.Second}
	return Tiers{
		TierHuman:         {ClassMessage: {60, time.Minute}, ClassAPI: {300, time.Minute}, ClassWS: ws, ClassEvent: ws},
		TierAgent:         {ClassMessage: {120, time.Minute}, ClassAPI: {600, time.Minute}, ClassWS: ws, ClassEvent: ws},
		TierAgentElevated: {ClassMessage: {300, time.Minute}, ClassAPI: {600, time.Minute}, ClassWS: ws, ClassEvent: ws},
		TierPlatform:      {ClassMessage: {600, time.Minute}, ClassAPI: {600, time.Minute}, ClassWS: ws, ClassEvent: ws},
	}
}

// MaxWindow is the longest window a Rule may have.
const MaxWindow = 24 * time.Hour

// Validate checks every rule: a limit of at least 1 and a window of 1 ms to
// 24 h, and that TierHuman exists (it is the fallback).
func (t Tiers) Validate() error {
	if _, ok := t[TierHuman]; !ok {
		return errors.New("ratelimit: tiers must define the human tier (the fallback)")
	}
	for tier, classes := range t {
		for class, r := range classes {
			if r.Limit < 1 || r.Window < time.Millisecond || r.Window > MaxWindow {
				return fmt.Errorf("ratelimit: rule %s/%s needs a limit >= 1 and a window of 1ms-%v", tier, class, MaxWindow)
			}
		}
	}
	return nil
}

// Rule returns the rule that applies to k: its tier's rule for its class,
// else TierHuman's; an error wrapping ErrNoRule when neither has one.
func (t Tiers) Rule(k Key) (Rule, error) {
	tier := k.Tier
	if tier == "" {
		tier = TierHuman
	}
	if r, ok := t[tier][k.Class]; ok {
		return r, nil
	}
	if r, ok := t[TierHuman][k.Class]; ok {
		return r, nil
	}
	return Rule{}, fmt.Errorf("%w: %s/%s", ErrNoRule, tier, k.Class)
}

// Decision is the outcome of one Allow.
type Decision struct {
	Allowed    bool
	Limit      int           // the rule's limit
	Remaining  int           // actions left in the window after this one
	RetryAfter time.Duration // when refused: time until an action is admitted again
}

// Reason is the client-facing refusal text for a refused Decision, e.g.
// "rate-limited: slow down, retry in 3s".
func (d Decision) Reason() string {
	secs := int64((d.RetryAfter + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return "rate-limited: slow down, retry in " + strconv.FormatInt(secs, 10) + "s"
}

// Limiter admits actions. Allow records the action when it is allowed; a
// refused action is not counted.
type Limiter interface {
	Allow(ctx context.Context, key Key) (Decision, error)
}

var (
	// ErrUnavailable is wrapped by errors of a limiter that cannot decide.
	// Its text is the refusal to send to the client.
	ErrUnavailable = errors.New("rate-limited: shared admission unavailable")
	// ErrNoRule is wrapped when no rule covers the key's class.
	ErrNoRule = errors.New("ratelimit: no rule for this class")
	// ErrInvalidKey is wrapped when a key lacks a community, pubkey or class.
	ErrInvalidKey = errors.New("ratelimit: invalid key")
)

// Validate returns an error wrapping ErrInvalidKey when k has no community,
// a pubkey that is not 64 lowercase hex characters, or a class that is not
// 1-32 of a-z, 0-9, '_' and '-' (limiters refuse such keys before counting).
func (k Key) Validate() error {
	if k.Community.IsZero() {
		return fmt.Errorf("%w: no community", ErrInvalidKey)
	}
	if len(k.PubKey) != 64 {
		return fmt.Errorf("%w: pubkey must be 64 lowercase hex characters", ErrInvalidKey)
	}
	for i := 0; i < len(k.PubKey); i++ {
		if c := k.PubKey[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("%w: pubkey must be 64 lowercase hex characters", ErrInvalidKey)
		}
	}
	if k.Class == "" || len(k.Class) > 32 {
		return fmt.Errorf("%w: class must be 1-32 bytes", ErrInvalidKey)
	}
	for i := 0; i < len(k.Class); i++ {
		if c := k.Class[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: class may hold only a-z, 0-9, '_' and '-'", ErrInvalidKey)
		}
	}
	return nil
}
