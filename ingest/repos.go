package ingest

import (
	"fmt"
	"strings"

	"github.com/buzzrelay/buzz/nostr"
)

// Limits of kind 30617 repository announcements.
const (
	RepoMaxIDLen          = 64   // bytes of the repository id (d)
	RepoMaxNameLen        = 256  // bytes
	RepoMaxDescriptionLen = 2048 // bytes
	RepoMaxURLLen         = 2048 // bytes of one web, clone or relays value
	RepoMaxValues         = 64   // values of one web, clone, relays or maintainers tag
)

// The rule ids of kind 30617, in the order they are checked.
const (
	RuleRepoDCardinality        = "d-cardinality"
	RuleRepoID                  = "repo-id"
	RuleRepoMetadataCardinality = "metadata-cardinality"
	RuleRepoMetadataLength      = "metadata-length"
	RuleRepoURL                 = "url-list"
	RuleRepoMaintainers         = "maintainers"
	RuleRepoEUC                 = "earliest-unique-commit"
)

func repoErr(rule, format string, args ...any) error {
	return &RuleError{Subject: "repository", Rule: rule, Detail: fmt.Sprintf(format, args...)}
}

// ValidateRepository checks a kind 30617 (NIP-34 repository announcement)
// event's tags. NIP-34 names the tags; buzz bounds them, because a
// repository id becomes a path segment (git URLs, /repos/<owner>/<id>) and
// every value is echoed to every reader:
//
//  1. d-cardinality: exactly one "d" tag.
//  2. repo-id: the d value (the repository id) is 1–64 bytes of
//     [A-Za-z0-9._-], does not start with '.', and contains no "..": safe
//     as one path segment on every file system and URL, never a hidden or
//     parent directory.
//  3. metadata-cardinality: at most one "name" and one "description".
//  4. metadata-length: name ≤ 256, description ≤ 2048 bytes.
//  5. url-list: each "web", "clone" and "relays" tag has 1–64 values, each
//     non-empty and ≤ 2048 bytes (NIP-34 lists several URLs in one tag;
//     repeated tags are accepted, and the URLs are not fetched or parsed).
//  6. maintainers: each "maintainers" tag has 1–64 values, each a
//     64-character lowercase hex public key.
//  7. earliest-unique-commit: an "r" tag marked "euc" (its third element)
//     holds a 40- or 64-character lowercase hex commit id (SHA-1 or
//     SHA-256 repositories), and there is at most one.
//
// Other tags ("t", plain "r", unknown ones) and the content are ignored.
// The error is a *RuleError.
func ValidateRepository(ev *nostr.Event) error {
	return validateRepositoryTags(ev.Tags)
}

func validateRepositoryTags(tags nostr.Tags) error {
	var d nostr.Tag
	nd := 0
	for _, t := range tags {
		if len(t) > 0 && t[0] == "d" {
			nd++
			d = t
		}
	}
	if nd != 1 {
		return repoErr(RuleRepoDCardinality, "exactly one d tag is required, found %d", nd)
	}
	if len(d) < 2 || !validRepoID(d[1]) {
		return repoErr(RuleRepoID, "the repository id (d) must be 1-%d characters of A-Z a-z 0-9 . _ -, not start with '.' and not contain '..'", RepoMaxIDLen)
	}
	nName, nDesc := 0, 0
	for _, t := range tags {
		if len(t) == 0 {
			continue
		}
		switch t[0] {
		case "name":
			nName++
		case "description":
			nDesc++
		}
		if nName > 1 || nDesc > 1 {
			return repoErr(RuleRepoMetadataCardinality, "more than one %s tag", t[0])
		}
	}
	for _, t := range tags {
		if len(t) < 2 {
			continue
		}
		switch {
		case t[0] == "name" && len(t[1]) > RepoMaxNameLen:
			return repoErr(RuleRepoMetadataLength, "name is longer than %d bytes", RepoMaxNameLen)
		case t[0] == "description" && len(t[1]) > RepoMaxDescriptionLen:
			return repoErr(RuleRepoMetadataLength, "description is longer than %d bytes", RepoMaxDescriptionLen)
		}
	}
	for _, t := range tags {
		if len(t) == 0 || (t[0] != "web" && t[0] != "clone" && t[0] != "relays") {
			continue
		}
		if len(t) < 2 || len(t)-1 > RepoMaxValues {
			return repoErr(RuleRepoURL, "a %s tag has 1-%d values", t[0], RepoMaxValues)
		}
		for _, v := range t[1:] {
			if v == "" || len(v) > RepoMaxURLLen {
				return repoErr(RuleRepoURL, "a %s value must be non-empty and at most %d bytes", t[0], RepoMaxURLLen)
			}
		}
	}
	for _, t := range tags {
		if len(t) == 0 || t[0] != "maintainers" {
			continue
		}
		if len(t) < 2 || len(t)-1 > RepoMaxValues {
			return repoErr(RuleRepoMaintainers, "a maintainers tag has 1-%d values", RepoMaxValues)
		}
		for _, v := range t[1:] {
			if !nostr.IsLowerHex(v, 64) {
				return repoErr(RuleRepoMaintainers, "a maintainer must be a 64-character lowercase hex public key")
			}
		}
	}
	euc := 0
	for _, t := range tags {
		if len(t) < 3 || t[0] != "r" || t[2] != "euc" {
			continue
		}
		euc++
		if euc > 1 {
			return repoErr(RuleRepoEUC, "more than one r tag marked euc")
		}
		if !nostr.IsLowerHex(t[1], 40) && !nostr.IsLowerHex(t[1], 64) {
			return repoErr(RuleRepoEUC, "the earliest unique commit must be a 40- or 64-character lowercase hex id")
		}
	}
	return nil
}

// validRepoID reports whether id is a safe repository id (see
// ValidateRepository, rule repo-id).
func validRepoID(id string) bool {
	if id == "" || len(id) > RepoMaxIDLen || id[0] == '.' || strings.Contains(id, "..") {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
