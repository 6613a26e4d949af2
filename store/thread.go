package store

import (
	"context"
	"strings"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// MaxThreadDepth is the deepest a reply may sit in its thread (Buzz: 100):
// a direct reply to a message is at depth 1, a reply to that reply at 2.
const MaxThreadDepth = 100

// MaxThreadParticipants bounds ThreadSummary.Participants (Buzz: 10).
const MaxThreadParticipants = 10

// IsThreadKind reports whether events of kind take part in threads: the
// chat message (9) and Buzz's channel message kinds 40002–40008. Only such
// an event, in a channel (with h), is recorded as a reply.
func IsThreadKind(kind int) bool {
	return kind == nostr.KindChatMessage || kind >= 40002 && kind <= 40008
}

// ThreadRef is what an event's NIP-10 marked e tags say of its place in a
// thread: it replies to Parent, in the thread rooted at Root.
type ThreadRef struct {
	Root   string // lowercase hex event id; Parent for a direct reply
	Parent string // lowercase hex event id
}

// ThreadOf reads ev's NIP-10 markers as Buzz does: an e tag of at least
// four elements whose value is 64 hex characters (either case; returned
// lower-cased) and whose fourth element is "root" or "reply". The last
// such tag of each marker wins. A "reply" alone is a direct reply (Root
// is Parent); "root" and "reply" a nested one; a "root" without a
// "reply", or no marker, is not a reply (ok false). Positional (unmarked)
// e tags are ignored. The kind and the channel are not looked at.
func ThreadOf(ev *nostr.Event) (ref ThreadRef, ok bool) {
	var root, reply string
	for _, t := range ev.Tags {
		if len(t) < 4 || t[0] != "e" || len(t[1]) != 64 || !isHex(t[1]) {
			continue
		}
		switch t[3] {
		case "root":
			root = t[1]
		case "reply":
			reply = t[1]
		}
	}
	if reply == "" {
		return ThreadRef{}, false
	}
	if root == "" {
		root = reply
	}
	return ThreadRef{Root: strings.ToLower(root), Parent: strings.ToLower(reply)}, true
}

// IsThreadReply reports whether a backend records ev as a reply: an event
// of a thread kind (IsThreadKind) with an h tag and a reply marker
// (ThreadOf) whose h tags name one channel (channel.OfEvent).
func IsThreadReply(ev *nostr.Event) (ThreadRef, bool) {
	if !IsThreadKind(ev.Kind) {
		return ThreadRef{}, false
	}
	if _, in, err := channel.OfEvent(ev); err != nil || !in {
		return ThreadRef{}, false
	}
	return ThreadOf(ev)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ThreadNode is a stored reply's place in its thread.
type ThreadNode struct {
	ID     string // the reply
	Parent string // the event it replies to
	Root   string // the thread's root message
	Depth  int    // 1 for a direct reply to the root
}

// ThreadSummary is the metadata of the thread below one message.
type ThreadSummary struct {
	// ReplyCount is the number of stored direct replies to the message.
	ReplyCount int64
	// DescendantCount is the number of stored replies at every depth of
	// the thread the message is the root of (0 for a reply, whose own
	// replies belong to its root's thread).
	DescendantCount int64
	// LastReplyAt is the greatest created_at of the stored replies of that
	// thread; 0 when it has none.
	LastReplyAt int64
	// Participants are the authors of those replies, most recent reply
	// first (ties by pubkey), at most MaxThreadParticipants.
	Participants []string
}

// ThreadStore keeps NIP-10 threads: which stored events are replies, where
// they sit, and each thread's counters. Both backends implement it.
//
// The backend maintains the metadata itself, in the transaction that
// stores or removes an event, on every path: Save of an event
// IsThreadReply accepts records it as a reply to its parent — at the
// parent's depth plus one in the parent's thread when the parent is a
// recorded reply, else at depth 1 in the thread rooted at the parent (the
// event's own root tag is not consulted: ingest checks it) — counting it
// in the parent's ReplyCount and in the root's DescendantCount and
// LastReplyAt; removing the event (a kind 5 of its author, a channel's
// delete-event, expiry where the backend removes expired rows) takes it
// out of them. The counters are therefore exact under concurrent replies
// and deletions, across every process sharing the backend, and another
// community's events never change them. A repeated Save (ErrDuplicate) or
// a refused one (ErrDeleted) records nothing.
type ThreadStore interface {
	// ThreadNode returns stored reply id's place in its thread; ok is
	// false when id is not a stored reply of c.
	ThreadNode(ctx context.Context, c tenant.CommunityID, id string) (n ThreadNode, ok bool, err error)
	// ThreadSummary returns the metadata of the thread below message id
	// in c (all zero when it has no stored replies). It reads the thread's
	// own rows, never the channel's events, and does not check that id is
	// stored: callers do, with the reader's access.
	ThreadSummary(ctx context.Context, c tenant.CommunityID, id string) (ThreadSummary, error)
}
