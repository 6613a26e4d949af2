package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/tenant"
)

// CommunityProfile is a community's own self-description, set by its owner
// or an operator. The relay serves it in NIP-11 and on its page for the
// community's hosts only, never for another host; an empty field falls back
// to the relay-wide value.
type CommunityProfile struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Icon        string `json:"icon"`    // an absolute http(s) URL or ""
	Contact     string `json:"contact"` // a URI such as mailto:… or ""
}

// Bounds of a CommunityProfile's fields, in bytes.
const (
	MaxProfileName        = 256
	MaxProfileDescription = 4096
	MaxProfileIcon        = 2048
	MaxProfileContact     = 512
)

// ErrInvalidProfile wraps every reason CommunityProfile.Validate gives.
var ErrInvalidProfile = errors.New("invalid community profile")

// AuditProfileChanged is the audit action of SetCommunityProfile. Object:
// ""; detail: the four fields.
const AuditProfileChanged audit.Action = "community_profile_changed"

// Validate checks the bounds: valid UTF-8 without control characters (the
// description may hold line breaks and tabs), each field within its
// maximum, the icon an absolute http(s) URL.
func (p CommunityProfile) Validate() error {
	for _, f := range []struct {
		name, v   string
		max       int
		multiline bool
	}{
		{"name", p.Name, MaxProfileName, false},
		{"description", p.Description, MaxProfileDescription, true},
		{"icon", p.Icon, MaxProfileIcon, false},
		{"contact", p.Contact, MaxProfileContact, false},
	} {
		if len(f.v) > f.max {
			return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalidProfile, f.name, f.max)
		}
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidProfile, f.name)
		}
		if strings.IndexFunc(f.v, func(r rune) bool {
			return unicode.IsControl(r) && !(f.multiline && (r == '\n' || r == '\t' || r == '\r'))
		}) >= 0 {
			return fmt.Errorf("%w: %s holds control characters", ErrInvalidProfile, f.name)
		}
	}
	if p.Icon != "" {
		u, err := url.Parse(p.Icon)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return fmt.Errorf("%w: icon must be an absolute http(s) URL", ErrInvalidProfile)
		}
	}
	return nil
}

// ProfileStore keeps community profiles. store/embedded and store/postgres
// implement it; storetest.RunProfiles is its conformance suite.
type ProfileStore interface {
	// CommunityProfile returns c's profile (all fields "" until one is
	// set); ErrNoCommunity for an unknown community.
	CommunityProfile(ctx context.Context, c tenant.CommunityID) (CommunityProfile, error)
	// SetCommunityProfile replaces c's profile after p.Validate, and
	// appends an AuditProfileChanged entry (actor from audit.WithActor) in
	// the same transaction. ErrNoCommunity for an unknown community.
	SetCommunityProfile(ctx context.Context, c tenant.CommunityID, p CommunityProfile) error
}

// ProfileAudit is the audit record of SetCommunityProfile.
func ProfileAudit(ctx context.Context, p CommunityProfile) audit.Record {
	return audit.Record{Action: AuditProfileChanged, Actor: audit.ActorFrom(ctx), Detail: map[string]any{
		"name": clip(p.Name), "description": clip(p.Description), "icon": clip(p.Icon), "contact": clip(p.Contact),
	}}
}
