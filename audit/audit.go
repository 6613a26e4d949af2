// Package audit defines buzz's per-community audit chains: what an entry
// holds, the canonical, versioned encoding its hash is computed over, and
// the verifier that finds the first broken link of a chain.
//
// Every community has its own chain. Entry seq numbers start at 1 and have
// no gaps; each entry carries the hash of the one before it (PrevHash, all
// zero for seq 1) and its own Hash, the SHA-256 of its canonical encoding
// (see Entry.ComputeHash). Changing, removing or reordering a stored entry
// breaks the chain at that entry or the next one, which Verifier reports.
// (Removing the newest entries of a chain cannot be detected from the chain
// alone; an operator who needs that keeps the latest head hash elsewhere.)
//
// Storage backends persist entries (store.AuditLog); this package has no
// storage and no state.
//
// It depends only on tenant: it must not import store, nostr or any
// backend.
package audit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/buzzrelay/buzz/tenant"
)

// Action names what an entry records. The values are part of the stored
// chain: never rename one.
type Action string

// Actions recorded by buzz. Other packages may define more (moderation,
// workflows): an action is any non-empty string of at most MaxActionLen
// bytes; by convention lowercase words joined by underscores.
const (
	// Channels (NIP-29 commands). Object: the channel UUID.
	ChannelCreated Action = "channel_created" // 9007
	ChannelUpdated Action = "channel_updated" // 9002
	ChannelDeleted Action = "channel_deleted" // 9008
	// Channel membership. Object: the channel UUID; detail "pubkey", "role".
	ChannelMemberJoined  Action = "channel_member_joined"  // 9021
	ChannelMemberLeft    Action = "channel_member_left"    // 9022
	ChannelMemberPut     Action = "channel_member_put"     // 9000 (add or role change)
	ChannelMemberRemoved Action = "channel_member_removed" // 9001
	// ChannelEventDeleted: a moderator removed an event (9005). Object: the
	// channel UUID; detail "event".
	ChannelEventDeleted Action = "channel_event_deleted"
	// ChannelInviteCreated: an owner or admin created an invite code
	// (9009). Object: the channel UUID; detail "event" (the code itself is
	// not recorded).
	ChannelInviteCreated Action = "channel_invite_created"

	// Community membership and policy. Object: the member's pubkey, or "".
	CommunityMemberPut     Action = "community_member_put"     // add or role change
	CommunityMemberRemoved Action = "community_member_removed" //
	CommunityPolicyChanged Action = "community_policy_changed" // detail "access"

	// Operator actions on a community. Object: the community id.
	CommunityProvisioned Action = "community_provisioned"
	CommunityArchived    Action = "community_archived"
	CommunityUnarchived  Action = "community_unarchived"
	CommunityTransferred Action = "community_transferred"

	// EventDeletionRequested: a NIP-09 (kind 5) deletion request was
	// stored. Object: the request's id; detail "events", "addresses".
	EventDeletionRequested Action = "event_deletion_requested"

	// RateLimited: an EVENT was refused by the rate limiter. Actor: the
	// author; detail "kind", "reason".
	RateLimited Action = "rate_limited"
)

// Limits of a Record, checked by Record.Validate.
const (
	MaxActionLen = 64
	MaxObjectLen = 512
	MaxDetailLen = 16 << 10 // canonical JSON bytes
)

// HashVersion is the version of the canonical encoding new entries use.
const HashVersion = 1

// Record is what a caller asks to append: the chain position, the previous
// hash and the entry's own hash are assigned by the backend.
type Record struct {
	Action Action
	// Actor is who caused the change: a 64-lowercase-hex public key, or ""
	// for the relay itself.
	Actor string
	// Object is what the change is about (a channel UUID, an event id, a
	// pubkey, a community id), or "".
	Object string
	// Detail is JSON-encodable extra data (a map or struct), or nil for {}.
	// It is stored in its canonical form (CanonicalJSON).
	Detail any
	// Time is when the change happened; zero means "now" at append. It is
	// stored truncated to microseconds, UTC.
	Time time.Time
}

// Errors of Record validation.
var (
	ErrInvalidRecord = errors.New("audit: invalid record")
)

// Prepared is a validated Record ready to be linked into a chain: detail in
// canonical JSON, actor decoded, time truncated.
type Prepared struct {
	Action   Action
	Actor    [32]byte
	HasActor bool
	Object   string
	Detail   []byte // canonical JSON
	Time     time.Time
}

// Prepare validates r and returns its stored form. now supplies the time of
// a record whose Time is zero.
func (r Record) Prepare(now time.Time) (Prepared, error) {
	p := Prepared{Action: r.Action, Object: r.Object}
	if r.Action == "" || len(r.Action) > MaxActionLen {
		return p, fmt.Errorf("%w: action must be 1..%d bytes", ErrInvalidRecord, MaxActionLen)
	}
	if len(r.Object) > MaxObjectLen || !validText(r.Object) {
		return p, fmt.Errorf("%w: object must be at most %d bytes of UTF-8 without NUL", ErrInvalidRecord, MaxObjectLen)
	}
	if !validText(string(r.Action)) {
		return p, fmt.Errorf("%w: action must be UTF-8 without NUL", ErrInvalidRecord)
	}
	if r.Actor != "" {
		if len(r.Actor) != 64 {
			return p, fmt.Errorf("%w: actor must be 64 lowercase hex characters", ErrInvalidRecord)
		}
		if _, err := hex.Decode(p.Actor[:], []byte(r.Actor)); err != nil || hex.EncodeToString(p.Actor[:]) != r.Actor {
			return p, fmt.Errorf("%w: actor must be 64 lowercase hex characters", ErrInvalidRecord)
		}
		p.HasActor = true
	}
	d, err := CanonicalJSON(r.Detail)
	if err != nil {
		return p, fmt.Errorf("%w: detail: %w", ErrInvalidRecord, err)
	}
	if len(d) > MaxDetailLen {
		return p, fmt.Errorf("%w: detail exceeds %d bytes", ErrInvalidRecord, MaxDetailLen)
	}
	p.Detail = d
	t := r.Time
	if t.IsZero() {
		t = now
	}
	p.Time = Truncate(t)
	return p, nil
}

// Truncate returns t as the chain stores it: UTC, microsecond precision.
func Truncate(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Entry is one link of a community's chain.
type Entry struct {
	Community tenant.CommunityID
	Seq       int64    // 1, 2, 3, … without gaps
	PrevHash  [32]byte // zero for seq 1
	Hash      [32]byte
	Version   int // the canonical encoding Hash was computed with
	Action    Action
	Actor     string // 64 lowercase hex, or ""
	Object    string
	Detail    []byte    // canonical JSON object
	Time      time.Time // UTC, microseconds
}

// Link returns the entry that follows (prevSeq, prevHash) in community c's
// chain with p's content, its hash computed with HashVersion. prevSeq is 0
// and prevHash zero for the first entry.
func Link(c tenant.CommunityID, prevSeq int64, prevHash [32]byte, p Prepared) Entry {
	e := Entry{
		Community: c, Seq: prevSeq + 1, PrevHash: prevHash, Version: HashVersion,
		Action: p.Action, Object: p.Object, Detail: p.Detail, Time: p.Time,
	}
	if p.HasActor {
		e.Actor = hex.EncodeToString(p.Actor[:])
	}
	e.Hash, _ = e.ComputeHash()
	return e
}

// encodingTag starts every canonical encoding, so an audit hash can never
// collide with a hash of some other buzz structure.
const encodingTag = "buzz-audit"

// ComputeHash returns the SHA-256 of e's canonical encoding for e.Version.
//
// Version 1 is, in order (integers big-endian; every variable-length field
// prefixed by its length as uint32, so no two entries share an encoding):
//
//	"buzz-audit" | version (1 byte) | community UUID (16) | seq (int64) |
//	prev_hash (32) | time in Unix microseconds (int64) |
//	len+action | actor presence (1 byte: 0 or 1) [+ actor key (32)] |
//	len+object | len+detail (canonical JSON)
//
// It fails only for an unknown version or an actor that is not 64 hex.
func (e *Entry) ComputeHash() ([32]byte, error) {
	if e.Version != 1 {
		return [32]byte{}, fmt.Errorf("audit: unknown hash version %d", e.Version)
	}
	var actor [32]byte
	if e.Actor != "" {
		if n, err := hex.Decode(actor[:], []byte(e.Actor)); err != nil || n != 32 {
			return [32]byte{}, errors.New("audit: actor is not 64 hex characters")
		}
	}
	h := sha256.New()
	buf := make([]byte, 0, 128+len(e.Action)+len(e.Object)+len(e.Detail))
	buf = append(buf, encodingTag...)
	buf = append(buf, byte(e.Version))
	u := e.Community.UUID()
	buf = append(buf, u[:]...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(e.Seq))
	buf = append(buf, e.PrevHash[:]...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(e.Time.UnixMicro()))
	buf = appendField(buf, []byte(e.Action))
	if e.Actor != "" {
		buf = append(buf, 1)
		buf = append(buf, actor[:]...)
	} else {
		buf = append(buf, 0)
	}
	buf = appendField(buf, []byte(e.Object))
	buf = appendField(buf, e.Detail)
	h.Write(buf)
	var out [32]byte
	h.Sum(out[:0])
	return out, nil
}

func appendField(buf, b []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
	return append(buf, b...)
}

// Verifier checks one community's chain, fed entry by entry in seq order.
// The zero Verifier expects the chain to start at seq 1.
type Verifier struct {
	next   int64
	prev   [32]byte
	broken int64
	reason string
}

// Add checks e against the entries added before. It returns false once the
// chain is broken (at e or earlier); Broken then tells where.
func (v *Verifier) Add(e Entry) bool {
	if v.broken != 0 {
		return false
	}
	if v.next == 0 {
		v.next = 1
	}
	fail := func(why string) bool {
		v.broken, v.reason = v.next, why
		return false
	}
	switch {
	case e.Seq != v.next:
		return fail(fmt.Sprintf("expected seq %d, found %d", v.next, e.Seq))
	case e.PrevHash != v.prev:
		return fail("prev_hash does not match the hash of the previous entry")
	}
	h, err := e.ComputeHash()
	if err != nil {
		return fail(err.Error())
	}
	if h != e.Hash {
		return fail("hash does not match the entry's content")
	}
	v.prev = e.Hash
	v.next++
	return true
}

// Broken returns the first seq at which the chain is broken and why, or
// (0, "") while it is intact.
func (v *Verifier) Broken() (seq int64, reason string) { return v.broken, v.reason }

// Verified returns how many entries verified so far.
func (v *Verifier) Verified() int64 {
	if v.next == 0 {
		return 0
	}
	return v.next - 1
}

// Head returns the hash of the last verified entry (zero if none).
func (v *Verifier) Head() [32]byte { return v.prev }

// actorKey is the context key of WithActor.
type actorKey struct{}

// WithActor returns a context carrying the public key (64 lowercase hex) of
// whoever asked for the changes made with it, for backends that record
// operator-plane changes (provisioning, archiving, transfers) whose calls
// do not otherwise name an actor.
func WithActor(ctx context.Context, pubkey string) context.Context {
	return context.WithValue(ctx, actorKey{}, pubkey)
}

// ActorFrom returns the actor WithActor stored in ctx, or "".
func ActorFrom(ctx context.Context) string {
	s, _ := ctx.Value(actorKey{}).(string)
	return s
}
