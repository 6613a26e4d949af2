package ingest

import (
	"fmt"
	"strings"

	"github.com/buzzrelay/buzz/nostr"
)

// Limits of kind 30621 projects (NIP-MP, as Buzz defines them).
const (
	ProjectMemberCap         = 64   // member "a" tags, counted raw (duplicates included)
	ProjectMaxDLen           = 1024 // bytes of the d value
	ProjectMaxNameLen        = 256  // bytes
	ProjectMaxDescriptionLen = 2048 // bytes
	ProjectMaxChannelLen     = 256  // bytes of buzz-channel
	ProjectMaxVisibilityLen  = 256  // bytes of buzz-visibility
)

// The rule ids of kind 30621, in the order they are checked. A refusal
// names exactly one of them; the order is normative, so a client can
// predict which rule fires for an event that breaks several.
const (
	RuleDCardinality         = "d-cardinality"
	RuleDEmpty               = "d-empty"
	RuleMemberCap            = "member-cap"
	RuleMemberTagArity       = "member-tag-arity"
	RuleMemberCoordinate     = "member-coordinate-malformed"
	RuleMemberDuplicate      = "member-duplicate"
	RuleMetadataCardinality  = "metadata-cardinality"
	RuleMetadataLength       = "metadata-length"
	projectCoordinatePrefix  = "30617:"
	projectCoordinateHexSize = 64
)

// ProjectRules lists the kind 30621 rule ids in checking order.
var ProjectRules = [...]string{
	RuleDCardinality, RuleDEmpty, RuleMemberCap, RuleMemberTagArity,
	RuleMemberCoordinate, RuleMemberDuplicate, RuleMetadataCardinality, RuleMetadataLength,
}

// RuleError is a per-kind validator's refusal. Its text, the OK message,
// is "invalid: <subject> <rule>: <detail>", e.g.
// "invalid: project member-cap: more than 64 member a tags".
type RuleError struct {
	Subject string // "project" (30621) or "repository" (30617)
	Rule    string // the rule id
	Detail  string
}

func (e *RuleError) Error() string { return "invalid: " + e.Subject + " " + e.Rule + ": " + e.Detail }

func projectErr(rule, format string, args ...any) error {
	return &RuleError{Subject: "project", Rule: rule, Detail: fmt.Sprintf(format, args...)}
}

// projectMetadata are the single-valued metadata tags of a project and
// their byte limits, in the order their length is reported.
var projectMetadata = [...]struct {
	name string
	max  int
}{
	{"name", ProjectMaxNameLen},
	{"description", ProjectMaxDescriptionLen},
	{"buzz-channel", ProjectMaxChannelLen},
	{"buzz-visibility", ProjectMaxVisibilityLen},
}

func projectMetadataMax(name string) (int, bool) {
	for _, m := range projectMetadata {
		if m.name == name {
			return m.max, true
		}
	}
	return 0, false
}

// ValidateProject checks a kind 30621 event's tags (NIP-MP, as Buzz defines them). Each
// rule is applied to the whole event before the next, in this order:
//
//  1. d-cardinality: exactly one "d" tag.
//  2. d-empty: its value is present, non-empty and at most 1024 bytes.
//  3. member-cap: at most 64 "a" tags, counted raw — before duplicates are
//     looked for, so one coordinate repeated thousands of times is refused
//     on count.
//  4. member-tag-arity: every "a" tag has 2 or 3 elements (the optional
//     third is NIP-01's relay hint, not interpreted).
//  5. member-coordinate-malformed: every "a" value, split on its first two
//     ':', is "30617", a 64-character lowercase hex owner, and a non-empty
//     repository d (which may itself contain ':').
//  6. member-duplicate: no coordinate appears twice (exact string match): a
//     relay cannot rewrite a signed event, so duplicates are refused rather
//     than stored for every reader to de-duplicate.
//  7. metadata-cardinality: at most one each of name, description,
//     buzz-channel, buzz-visibility.
//  8. metadata-length: name ≤ 256, description ≤ 2048, buzz-channel ≤ 256,
//     buzz-visibility ≤ 256 bytes.
//
// Zero members are valid, unknown tags and the content are ignored,
// metadata values are not interpreted, and members are not authorized: a
// project may name repositories of other owners, because membership grants
// nothing. The error is a *RuleError.
func ValidateProject(ev *nostr.Event) error {
	return validateProjectTags(ev.Tags)
}

func validateProjectTags(tags nostr.Tags) error {
	var d nostr.Tag
	nd, na := 0, 0
	for _, t := range tags {
		if len(t) == 0 {
			continue
		}
		switch t[0] {
		case "d":
			nd++
			d = t
		case "a":
			na++
		}
	}
	if nd != 1 {
		return projectErr(RuleDCardinality, "exactly one d tag is required, found %d", nd)
	}
	if len(d) < 2 || d[1] == "" {
		return projectErr(RuleDEmpty, "the d tag must have a non-empty value")
	}
	if len(d[1]) > ProjectMaxDLen {
		return projectErr(RuleDEmpty, "the d value is longer than %d bytes", ProjectMaxDLen)
	}
	if na > ProjectMemberCap {
		return projectErr(RuleMemberCap, "at most %d member a tags, found %d", ProjectMemberCap, na)
	}
	for _, t := range tags {
		if len(t) > 0 && t[0] == "a" && (len(t) < 2 || len(t) > 3) {
			return projectErr(RuleMemberTagArity, "a member a tag has 2 or 3 elements, found %d", len(t))
		}
	}
	for _, t := range tags {
		if len(t) > 0 && t[0] == "a" && !validProjectMember(t[1]) {
			return projectErr(RuleMemberCoordinate, "a member must be 30617:<64 lowercase hex owner>:<non-empty repository d>")
		}
	}
	seen := make(map[string]struct{}, na)
	for _, t := range tags {
		if len(t) == 0 || t[0] != "a" {
			continue
		}
		if _, dup := seen[t[1]]; dup {
			return projectErr(RuleMemberDuplicate, "member %s is listed twice", t[1])
		}
		seen[t[1]] = struct{}{}
	}
	var counts [len(projectMetadata)]int
	for _, t := range tags {
		if len(t) == 0 {
			continue
		}
		for i, m := range projectMetadata {
			if t[0] == m.name {
				counts[i]++
				if counts[i] == 2 {
					return projectErr(RuleMetadataCardinality, "more than one %s tag", m.name)
				}
			}
		}
	}
	for _, t := range tags {
		if len(t) < 2 {
			continue
		}
		if max, ok := projectMetadataMax(t[0]); ok && len(t[1]) > max {
			return projectErr(RuleMetadataLength, "%s is longer than %d bytes", t[0], max)
		}
	}
	return nil
}

// validProjectMember reports whether a is "30617:<owner>:<d>" with a
// 64-character lowercase hex owner and a non-empty d.
func validProjectMember(a string) bool {
	rest, ok := strings.CutPrefix(a, projectCoordinatePrefix)
	if !ok {
		return false
	}
	owner, d, ok := strings.Cut(rest, ":")
	return ok && d != "" && nostr.IsLowerHex(owner, projectCoordinateHexSize)
}
