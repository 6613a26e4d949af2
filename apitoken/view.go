package apitoken

import "github.com/buzzrelay/buzz/store"

// View is a token's record as buzz shows it — the HTTP routes of package
// tokenhttp and buzzd admin token -json — and never the token itself, but
// in the answer to a mint. Times are Unix seconds; ExpiresAt and RevokedAt
// are null when the token never expires or is not revoked.
type View struct {
	Token     string   `json:"token,omitempty"` // only in the answer to a mint
	ID        string   `json:"id"`
	PubKey    string   `json:"pubkey"`
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes"`
	CreatedBy string   `json:"created_by,omitempty"`
	CreatedAt int64    `json:"created_at"`
	ExpiresAt *int64   `json:"expires_at"`
	RevokedAt *int64   `json:"revoked_at"`
}

// NewView returns t's View, with no token.
func NewView(t store.APIToken) View {
	v := View{ID: t.ID, PubKey: t.Owner, Name: t.Name, Scopes: t.Scopes, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt.Unix()}
	if !t.ExpiresAt.IsZero() {
		at := t.ExpiresAt.Unix()
		v.ExpiresAt = &at
	}
	if t.Revoked() {
		at := t.RevokedAt.Unix()
		v.RevokedAt = &at
	}
	return v
}
