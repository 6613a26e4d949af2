package messaging

import "github.com/buzzrelay/buzz/nostr"

// Buzz's channel message kinds. Each requires an h tag naming its channel
// and is admitted, fenced, searched and deleted as a chat message (kind 9).
const (
	KindMessage    = 40002 // a channel message (Buzz's stream message)
	KindEdit       = 40003 // an edit of a message: e names it, content is the new text; its author, or its agent author's owner
	KindPinned     = 40004 // a message pinned in a channel
	KindBookmarked = 40005 // a message bookmarked by a user
	KindScheduled  = 40006 // a message scheduled for later delivery
	KindReminder   = 40007 // a reminder attached to a message or a time
	KindDiff       = 40008 // a diff (unified format) with repo and commit tags; content ≤ MaxDiffBytes
)

// KindReaction is NIP-25's reaction: content is an emoji, "+" or "-" ("" is
// "+"), the last e tag names the reacted-to event.
const KindReaction = 7

// Limits.
const (
	// MaxDiffBytes bounds a diff's content (Buzz: 60 KB).
	MaxDiffBytes = 61_440
	// MaxEmojiChars bounds a reaction's emoji, in characters (code
	// points), as Buzz does.
	MaxEmojiChars = 64
)

// IsChannelMessage reports whether kind is one of the channel message
// kinds 40002–40008.
func IsChannelMessage(kind int) bool {
	return kind >= KindMessage && kind <= KindDiff
}

// IsMessage reports whether kind carries a message's text for readers and
// triggers: a chat message (9) or a Buzz message (40002).
func IsMessage(kind int) bool {
	return kind == nostr.KindChatMessage || kind == KindMessage
}

// Buzz's forum kinds. Each requires an h tag naming its channel and is
// admitted, fenced, read, searched and deleted as a chat message (kind 9).
const (
	KindForumPost    = 45001 // a forum post: the root of a thread; content is markdown
	KindForumVote    = 45002 // a vote: content "+" or "-", e names a forum post or comment of the channel
	KindForumComment = 45003 // a comment on a forum post (NIP-10 e tags)
)

// IsForum reports whether kind is one of the forum kinds 45001–45003.
func IsForum(kind int) bool {
	return kind >= KindForumPost && kind <= KindForumComment
}

// IsVoteTarget reports whether a forum vote may name an event of kind: a
// forum post or a forum comment.
func IsVoteTarget(kind int) bool {
	return kind == KindForumPost || kind == KindForumComment
}
