package messaging

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/buzzrelay/buzz/nostr"
)

// Refusals, as Buzz words them (the OK message of a refused event).
const (
	MsgProfileNotJSON   = "invalid: kind:0 content must be valid JSON"
	MsgProfileNotObject = "invalid: kind:0 content must be a JSON object"
	MsgEditNoTarget     = "invalid: missing e tag for edit target"
	MsgEditNotFound     = "invalid: edit target event not found"
	MsgEditNotAuthor    = "invalid: must be event author to edit"
	MsgEditNoChannel    = "invalid: target event has no channel"
	MsgReactionNoTarget = "invalid: reaction must reference a target event via e tag"
	MsgReactionNotFound = "invalid: reaction target event not found"
	MsgReactionExists   = "duplicate: reaction already exists"
	MsgDiffNoRepo       = "invalid: diff event requires a repo tag"
	MsgDiffNoCommit     = "invalid: diff event requires a commit tag"
	MsgDiffRepoURL      = "invalid: repo URL must be http or https"
	MsgDiffCommit       = "invalid: commit SHA must be at least 7 hex characters"
	MsgDiffParent       = "invalid: parent-commit SHA must be at least 7 hex characters"
	MsgDiffBranch       = "invalid: branch tag requires both source and target"
	MsgDiffPR           = "invalid: pr number must be a positive integer"
	MsgVoteNoTarget     = "invalid: missing e tag for vote target"
	MsgVoteNotFound     = "invalid: vote target event not found"
	MsgVoteNotForum     = "invalid: vote target must be a forum post or comment"
	MsgVoteNoChannel    = "invalid: target event has no channel"
)

// Validate applies the rules of ev's kind that need nothing but the event:
// kind 0 content is a JSON object; an edit (40003) names its target; a
// diff (40008) passes ValidateDiff; a reaction (7) passes ParseReaction;
// a forum vote (45002) names its target (VoteTarget).
// It returns nil for every other kind. The error's text is the OK message.
func Validate(ev *nostr.Event) error {
	switch ev.Kind {
	case nostr.KindProfile:
		return ValidateProfile(ev.Content)
	case KindEdit:
		_, err := EditTarget(ev)
		return err
	case KindDiff:
		return ValidateDiff(ev)
	case KindReaction:
		_, err := ParseReaction(ev)
		return err
	case KindForumVote:
		_, err := VoteTarget(ev)
		return err
	}
	return nil
}

// VoteTarget returns the id of the forum post or comment a vote (45002)
// names: its first e tag holding an event id, as Buzz reads it.
func VoteTarget(ev *nostr.Event) (string, error) {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "e" && nostr.IsLowerHex(t[1], 64) {
			return t[1], nil
		}
	}
	return "", errors.New(MsgVoteNoTarget)
}

// ValidateProfile checks a kind 0 content: a JSON object (NIP-01's
// stringified metadata). Buzz refuses content that is not JSON.
func ValidateProfile(content string) error {
	var v any
	if err := json.Unmarshal([]byte(content), &v); err != nil {
		return errors.New(MsgProfileNotJSON)
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New(MsgProfileNotObject)
	}
	return nil
}

// EditTarget returns the id of the message an edit (40003) replaces the
// text of: its first e tag holding an event id.
func EditTarget(ev *nostr.Event) (string, error) {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "e" && nostr.IsLowerHex(t[1], 64) {
			return t[1], nil
		}
	}
	return "", errors.New(MsgEditNoTarget)
}

// Reaction is what a reaction (kind 7) says: Emoji on event Target.
type Reaction struct {
	Target string // event id: the last e tag (NIP-25)
	Emoji  string // the content; "" is "+"
}

// ParseReaction reads a reaction: the target is its last e tag holding an
// event id; the emoji its content ("" means "+"), at most MaxEmojiChars
// characters.
func ParseReaction(ev *nostr.Event) (Reaction, error) {
	var r Reaction
	for i := len(ev.Tags) - 1; i >= 0; i-- {
		if t := ev.Tags[i]; len(t) >= 2 && t[0] == "e" && nostr.IsLowerHex(t[1], 64) {
			r.Target = t[1]
			break
		}
	}
	if r.Target == "" {
		return Reaction{}, errors.New(MsgReactionNoTarget)
	}
	r.Emoji = ev.Content
	if r.Emoji == "" {
		r.Emoji = "+"
	}
	if n := utf8.RuneCountInString(r.Emoji); n > MaxEmojiChars {
		return Reaction{}, fmt.Errorf("invalid: reaction emoji exceeds %d characters (got %d)", MaxEmojiChars, n)
	}
	return r, nil
}

// ValidateDiff checks a diff (40008) as Buzz does: content at most
// MaxDiffBytes; a repo tag with an http(s) URL and a commit tag with a hex
// SHA of at least 7 characters are required; parent-commit, branch
// (source and target) and pr (a positive number) are checked when present.
func ValidateDiff(ev *nostr.Event) error {
	if n := len(ev.Content); n > MaxDiffBytes {
		return fmt.Errorf("invalid: diff content exceeds 60KB limit (got %d bytes)", n)
	}
	var repo, commit bool
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "repo":
			if !strings.HasPrefix(t[1], "http://") && !strings.HasPrefix(t[1], "https://") {
				return errors.New(MsgDiffRepoURL)
			}
			repo = true
		case "commit":
			if !isSHA(t[1]) {
				return errors.New(MsgDiffCommit)
			}
			commit = true
		case "parent-commit":
			if !isSHA(t[1]) {
				return errors.New(MsgDiffParent)
			}
		case "branch":
			if len(t) < 3 || t[1] == "" || t[2] == "" {
				return errors.New(MsgDiffBranch)
			}
		case "pr":
			if n, err := strconv.ParseUint(t[1], 10, 32); err != nil || n == 0 {
				return errors.New(MsgDiffPR)
			}
		}
	}
	if !repo {
		return errors.New(MsgDiffNoRepo)
	}
	if !commit {
		return errors.New(MsgDiffNoCommit)
	}
	return nil
}

func isSHA(s string) bool {
	if len(s) < 7 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// CurrentText returns the current text of a message: the content of the
// newest edit (40003) of it by its author — or by an editor in alsoBy, the
// owner of the agent that wrote it — or the message's own content. edits
// may hold anything; only those edits naming msg count (ties on created_at
// go to the lowest id, as replaceable events do).
func CurrentText(msg *nostr.Event, edits []*nostr.Event, alsoBy ...string) string {
	var best *nostr.Event
	for _, e := range edits {
		if e.Kind != KindEdit || e.PubKey != msg.PubKey && !slices.Contains(alsoBy, e.PubKey) {
			continue
		}
		if id, err := EditTarget(e); err != nil || id != msg.ID {
			continue
		}
		if best == nil || e.CreatedAt > best.CreatedAt || e.CreatedAt == best.CreatedAt && e.ID < best.ID {
			best = e
		}
	}
	if best == nil {
		return msg.Content
	}
	return best.Content
}
