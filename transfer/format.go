package transfer

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Version is the export format this package writes and the newest it
// reads. The header line names it: {"buzz_export":1}.
const Version = 1

// Record types of format version 1, in the order an export writes a
// community's records.
const (
	TypeCommunity        = "community"
	TypeMember           = "member"
	TypeChannel          = "channel"
	TypeChannelMember    = "channel_member"
	TypeName             = "name"
	TypeRestriction      = "restriction"
	TypeReport           = "report"
	TypeModerationAction = "moderation_action"
	TypeAudit            = "audit"
	TypeEvent            = "event"
	TypeEnd              = "end"
)

// header is the first line of an export.
type header struct {
	BuzzExport int `json:"buzz_export"`
}

// envelope is what every record line holds: its type and the primary host
// of the community it belongs to (the end record has none). Event lines
// carry the event itself.
type envelope struct {
	Type  string          `json:"type"`
	Host  string          `json:"host"`
	Event json.RawMessage `json:"event"`
}

type aliasJSON struct {
	Host      string `json:"host"`
	CreatedAt int64  `json:"created_at"`
}

type profileJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Icon        string `json:"icon"`
	Contact     string `json:"contact"`
}

type communityJSON struct {
	Type       string      `json:"type"`
	Host       string      `json:"host"`
	ID         string      `json:"id"`
	Owner      string      `json:"owner,omitempty"`
	CreatedAt  int64       `json:"created_at"`
	ArchivedAt int64       `json:"archived_at,omitempty"`
	Access     string      `json:"access"`
	Profile    profileJSON `json:"profile"`
	Aliases    []aliasJSON `json:"aliases"`
}

type memberJSON struct {
	Type    string `json:"type"`
	Host    string `json:"host"`
	PubKey  string `json:"pubkey"`
	Role    string `json:"role"`
	AddedAt int64  `json:"added_at"`
}

type channelJSON struct {
	Type        string `json:"type"`
	Host        string `json:"host"`
	ID          string `json:"id"`
	Slug        string `json:"slug,omitempty"`
	Name        string `json:"name"`
	About       string `json:"about"`
	Picture     string `json:"picture"`
	Visibility  string `json:"visibility"`
	ChannelType string `json:"channel_type"`
	CreatedBy   string `json:"created_by"`
	CreatedAt   int64  `json:"created_at"`
	DeletedAt   int64  `json:"deleted_at,omitempty"`
	Closed      bool   `json:"closed"`
	Restricted  bool   `json:"restricted"`
	Hidden      bool   `json:"hidden"`
}

type channelMemberJSON struct {
	Type     string `json:"type"`
	Host     string `json:"host"`
	Channel  string `json:"channel"`
	PubKey   string `json:"pubkey"`
	Role     string `json:"role"`
	JoinedAt int64  `json:"joined_at"`
	AddedBy  string `json:"added_by,omitempty"`
}

type nameJSON struct {
	Type      string `json:"type"`
	Host      string `json:"host"`
	PubKey    string `json:"pubkey"`
	Name      string `json:"name"`
	UpdatedAt int64  `json:"updated_at"`
}

type restrictionJSON struct {
	Type      string `json:"type"`
	Host      string `json:"host"`
	PubKey    string `json:"pubkey"`
	Kind      string `json:"kind"`
	Until     int64  `json:"until,omitempty"`
	Reason    string `json:"reason"`
	Actor     string `json:"actor"`
	CreatedAt int64  `json:"created_at"`
}

type reportJSON struct {
	Type         string          `json:"type"`
	Host         string          `json:"host"`
	ID           string          `json:"id"`
	Reporter     string          `json:"reporter"`
	TargetPubKey string          `json:"target_pubkey"`
	TargetEvent  string          `json:"target_event,omitempty"`
	ReportType   string          `json:"report_type"`
	CreatedAt    int64           `json:"created_at"`
	Status       string          `json:"status"`
	ReceivedAt   int64           `json:"received_at"`
	ResolvedBy   string          `json:"resolved_by,omitempty"`
	ResolvedAt   int64           `json:"resolved_at,omitempty"`
	Event        json.RawMessage `json:"event"`
}

type actionJSON struct {
	Type      string `json:"type"`
	Host      string `json:"host"`
	Action    string `json:"action"`
	Actor     string `json:"actor"`
	Target    string `json:"target"`
	Reason    string `json:"reason"`
	Until     int64  `json:"until,omitempty"`
	Status    string `json:"status,omitempty"`
	EventID   string `json:"event_id,omitempty"`
	CreatedAt int64  `json:"created_at"`
}

type auditJSON struct {
	Type     string          `json:"type"`
	Host     string          `json:"host"`
	Seq      int64           `json:"seq"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
	Version  int             `json:"version"`
	Action   string          `json:"action"`
	Actor    string          `json:"actor,omitempty"`
	Object   string          `json:"object"`
	Detail   json.RawMessage `json:"detail"`
	TimeUS   int64           `json:"time_us"`
}

type endJSON struct {
	Type        string `json:"type"`
	Communities int64  `json:"communities"`
	Events      int64  `json:"events"`
	Records     int64  `json:"records"`
}

// unix is t in seconds, 0 for the zero time.
func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// fromUnix is the time of s seconds, the zero time for 0.
func fromUnix(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

// parseUUID parses the canonical lowercase 8-4-4-4-12 form.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' || strings.ToLower(s) != s {
		return u, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, false
	}
	return u, true
}

func isKey(s string) bool { return nostr.IsLowerHex(s, 64) }

func optKey(s string) bool { return s == "" || isKey(s) }

// decodeHash decodes 64 lowercase hex characters.
func decodeHash(s string) ([32]byte, bool) {
	var h [32]byte
	b, ok := nostr.DecodeHex32(s)
	if !ok {
		return h, false
	}
	copy(h[:], b)
	return h, true
}

// strict decodes line into v, refusing unknown structure errors with a
// plain message.
func strict(line []byte, v any) error {
	if err := json.Unmarshal(line, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("field %q: want a %s", te.Field, te.Type)
		}
		return errors.New("not a JSON object")
	}
	return nil
}

func (r communityJSON) state() (store.CommunityState, error) {
	u, ok := parseUUID(r.ID)
	if !ok || u == [16]byte{} {
		return store.CommunityState{}, errors.New(`"id": want a UUID`)
	}
	if err := tenant.ValidateHost(r.Host); err != nil {
		return store.CommunityState{}, fmt.Errorf(`"host": %w`, err)
	}
	if !optKey(r.Owner) {
		return store.CommunityState{}, errors.New(`"owner": want 64 lowercase hex characters`)
	}
	st := store.CommunityState{
		Community: store.Community{ID: tenant.FromUUID(u), Host: r.Host, OwnerPubKey: r.Owner,
			CreatedAt: time.Unix(r.CreatedAt, 0).UTC(), ArchivedAt: fromUnix(r.ArchivedAt)},
		Access:  channel.AccessPolicy(r.Access),
		Profile: store.CommunityProfile(r.Profile),
	}
	if !st.Access.Valid() {
		return st, errors.New(`"access": want "open" or "members"`)
	}
	for _, a := range r.Aliases {
		if err := tenant.ValidateHost(a.Host); err != nil {
			return st, fmt.Errorf(`alias %q: %w`, a.Host, err)
		}
		st.Aliases = append(st.Aliases, store.HostAlias{Host: a.Host, CreatedAt: time.Unix(a.CreatedAt, 0).UTC()})
	}
	return st, nil
}

func (r auditJSON) entry(c tenant.CommunityID) (audit.Entry, error) {
	e := audit.Entry{Community: c, Seq: r.Seq, Version: r.Version, Action: audit.Action(r.Action), Actor: r.Actor,
		Object: r.Object, Detail: []byte(r.Detail), Time: time.UnixMicro(r.TimeUS).UTC()}
	var ok1, ok2 bool
	e.Hash, ok1 = decodeHash(r.Hash)
	e.PrevHash, ok2 = decodeHash(r.PrevHash)
	if !ok1 || !ok2 || r.Seq < 1 || !optKey(r.Actor) || len(r.Detail) == 0 {
		return e, errors.New("malformed audit entry")
	}
	h, err := e.ComputeHash()
	if err != nil {
		return e, fmt.Errorf("audit entry seq %d: %w", r.Seq, err)
	}
	if h != e.Hash {
		return e, fmt.Errorf("audit entry seq %d: hash does not match its content", r.Seq)
	}
	return e, nil
}
