package buzz

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Info is the relay's NIP-11 self-description. It is relay-wide: it is
// served for every host, mapped or not. A community's own profile
// (WithCommunityProfiles) overrides its non-empty fields for that
// community's hosts only.
type Info struct {
	Name        string
	Description string
	// PubKey is the operator's pubkey, 64 lowercase hex characters, or ""
	// (omitted from the document).
	PubKey   string
	Contact  string
	Software string
	Version  string
	Icon     string
}

// Info returns the relay information given with WithInfo.
func (r *Relay) Info() Info { return r.cfg.info }

// CommunityProfiles supplies each community's own self-description.
// store/sqlite and store/postgres implement it (store.ProfileStore).
type CommunityProfiles interface {
	CommunityProfile(ctx context.Context, c tenant.CommunityID) (store.CommunityProfile, error)
}

// NIP11Document is the NIP-11 relay information document.
type NIP11Document struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	PubKey      string `json:"pubkey,omitempty"`
	// Self is the relay's own key, which NIP-11 names "self": for a
	// community's host (with channels) the key that signs that community's
	// NIP-29 group state, derived from the relay key; in the relay-wide
	// document, the relay key itself (WithRelayKey).
	Self          string `json:"self,omitempty"`
	Contact       string `json:"contact,omitempty"`
	Software      string `json:"software,omitempty"`
	Version       string `json:"version,omitempty"`
	Icon          string `json:"icon,omitempty"`
	SupportedNIPs []int  `json:"supported_nips"`
	// SupportedExtensions names draft extensions without a NIP number:
	// "nip-er" (event reminders, kind 30300) when the store keeps reminders.
	SupportedExtensions []string        `json:"supported_extensions,omitempty"`
	Limitation          NIP11Limitation `json:"limitation"`
}

// NIP11Limitation is the "limitation" object of a NIP-11 document. Every
// value is read from the Limits the relay enforces.
type NIP11Limitation struct {
	MaxMessageLength    int   `json:"max_message_length"`
	MaxSubscriptions    int   `json:"max_subscriptions"`
	MaxFilters          int   `json:"max_filters"`
	MaxLimit            int   `json:"max_limit"`
	DefaultLimit        int   `json:"default_limit"`
	MaxSubIDLength      int   `json:"max_subid_length"`
	MaxContentLength    int   `json:"max_content_length"`
	CreatedAtUpperLimit int64 `json:"created_at_upper_limit"`
	AuthRequired        bool  `json:"auth_required"`
	RestrictedWrites    bool  `json:"restricted_writes"`
	// Buzz's own limits (not in NIP-11, which allows more fields): values
	// per filter field, filter bytes per REQ and per connection, messages
	// per second per connection, and the seconds a query may run.
	MaxFilterValues          int `json:"max_filter_values"`
	MaxSubscriptionBytes     int `json:"max_subscription_bytes"`
	MaxConnectionFilterBytes int `json:"max_connection_filter_bytes"`
	MaxMessageRate           int `json:"max_message_rate"`
	MaxQuerySeconds          int `json:"max_query_seconds"`
	// NIP-ER, with "nip-er" in supported_extensions: "push" (due
	// reminders are sent to their author's subscriptions) and the horizon
	// of not_before, in seconds.
	DueDeliveryMode   string `json:"due_delivery_mode,omitempty"`
	MaxNotBeforeDelta int64  `json:"max_not_before_delta,omitempty"`
}

// NIP is one entry of the relay's NIP table: a NIP the relay implements,
// what it gives a client, and whether it is on for a given relay.
type NIP struct {
	Number int
	Title  string // what the NIP is, for people ("Relay-based groups")
	// on reports whether r implements it; nil: every relay does.
	on func(r *Relay) bool
}

// nipTable is the one list of the NIPs buzz implements. NIP-11's
// supported_nips and the home page are both read from it (Relay.NIPs), and
// a test checks every entry against what a relay actually serves, so a
// feature switched on without its entry, or an entry whose feature is off,
// fails it.
var nipTable = [...]NIP{
	{Number: 1, Title: "Basic protocol"},
	{Number: 9, Title: "Event deletion"},
	{Number: 11, Title: "Relay information document"},
	{Number: 17, Title: "Private direct messages (delivered to their recipient only)"},
	{Number: 25, Title: "Reactions (one per author, emoji and target where the store keeps reaction slots)"},
	{Number: 29, Title: "Relay-based groups (channels)", on: func(r *Relay) bool { return r.channels != nil }},
	{Number: 40, Title: "Expiration timestamp"},
	{Number: 42, Title: "Authentication of clients to relays"},
	{Number: 43, Title: "Relay access metadata (membership required; 8000, 8001, 13534, 28936)", on: func(r *Relay) bool {
		return r.channels != nil && r.cfg.membersOnly && r.cfg.hasRelayKey
	}},
	{Number: 45, Title: "Event counts (COUNT)"},
	{Number: 50, Title: "Search"},
	{Number: 56, Title: "Reporting", on: func(r *Relay) bool { return r.moderation != nil }},
	{Number: 59, Title: "Gift wrap (readable by its recipient only)"},
	{Number: 77, Title: "Negentropy syncing (NEG-OPEN, NEG-MSG, NEG-CLOSE)"},
	{Number: 98, Title: "HTTP auth (the HTTP API)", on: func(r *Relay) bool { return r.cfg.httpAuth != nil }},
}

// NIPs returns the NIPs this relay implements, in ascending order: the
// entries of buzz's NIP table that its options switch on, and those its
// features advertise (Host.Advertise). NIP-11's supported_nips and the home
// page list exactly these.
func (r *Relay) NIPs() []NIP {
	out := make([]NIP, 0, len(nipTable))
	for _, n := range nipTable {
		if n.on == nil || n.on(r) {
			out = append(out, n)
		}
	}
	if r.features != nil {
		for _, n := range r.features.nips {
			if !slices.ContainsFunc(out, func(m NIP) bool { return m.Number == n.Number }) {
				out = append(out, NIP{Number: n.Number, Title: n.Title})
			}
		}
	}
	slices.SortFunc(out, func(a, b NIP) int { return a.Number - b.Number })
	return out
}

// nips is the supported_nips list of this relay.
func (r *Relay) nips() []int {
	ns := r.NIPs()
	out := make([]int, len(ns))
	for i, n := range ns {
		out[i] = n.Number
	}
	return out
}

// NIP11Document returns the document the relay serves.
func (r *Relay) NIP11Document() NIP11Document {
	l := r.cfg.limits
	i := r.cfg.info
	pub, self := i.PubKey, ""
	if r.cfg.hasRelayKey {
		self = r.cfg.relayKey.PublicKey() // the master key only: never a community's
	}
	if !nostr.IsLowerHex(pub, 64) {
		pub = self // no administrator named: the relay's own key
	}
	doc := NIP11Document{
		Name:          i.Name,
		Description:   i.Description,
		PubKey:        pub,
		Self:          self,
		Contact:       i.Contact,
		Software:      i.Software,
		Version:       i.Version,
		Icon:          i.Icon,
		SupportedNIPs: r.nips(),
		Limitation: NIP11Limitation{
			MaxMessageLength:    l.MaxFrameBytes,
			MaxSubscriptions:    l.MaxSubscriptions,
			MaxFilters:          l.MaxFilters,
			MaxLimit:            l.MaxLimit,
			DefaultLimit:        l.MaxLimit,
			MaxSubIDLength:      l.MaxSubIDLength,
			MaxContentLength:    l.MaxContentBytes,
			CreatedAtUpperLimit: int64(l.MaxFutureSkew.Seconds()),
			AuthRequired:        r.cfg.auth == AuthRequired,
			RestrictedWrites:    r.cfg.auth == AuthRequired || len(r.cfg.eventPolicies) > 0,

			MaxFilterValues:          l.MaxFilterValues,
			MaxSubscriptionBytes:     l.MaxSubscriptionBytes,
			MaxConnectionFilterBytes: l.MaxConnFilterBytes,
			MaxMessageRate:           l.MessageRate,
			MaxQuerySeconds:          int(max(1, l.QueryTimeout.Round(time.Second)/time.Second)),
		},
	}
	if reminderStore(r.cfg.store) != nil {
		doc.SupportedExtensions = []string{"nip-er"}
		doc.Limitation.DueDeliveryMode = "push"
		doc.Limitation.MaxNotBeforeDelta = int64(l.MaxNotBeforeDelta / time.Second)
	}
	return doc
}

// documentFor returns the document for a request bound to tc: the
// relay-wide document with the non-empty fields of tc's community profile
// in place of the relay's name, description, icon and contact. When the
// profile cannot be read it is the relay-wide document (NIP-11 fails open
// and holds nothing of another community).
//
// With channels, "self" is the community's state key — the key that signs
// its NIP-29 group state (39000–39003) — and so is "pubkey" unless the
// operator named an administrator: NIP-29 clients look group state up by
// the relay's NIP-11 key, so for each host the advertised key and the
// signer agree. The state key derives from the relay key, so it is the
// same in every process and after restarts when the relay key is.
func (r *Relay) documentFor(ctx context.Context, tc tenant.TenantContext) NIP11Document {
	doc := r.NIP11Document()
	if tc.IsZero() {
		return doc
	}
	if r.channels != nil && r.keys != nil {
		sk := r.keys.For(tc.Community()).PublicKey()
		if !nostr.IsLowerHex(r.cfg.info.PubKey, 64) {
			doc.PubKey = sk
		}
		doc.Self = sk
	}
	if r.cfg.profiles == nil {
		return doc
	}
	p, err := r.cfg.profiles.CommunityProfile(ctx, tc.Community())
	if err != nil {
		r.log.DebugContext(ctx, "buzz: community profile unavailable; serving the relay's", "err", err)
		return doc
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&doc.Name, p.Name}, {&doc.Description, p.Description}, {&doc.Icon, p.Icon}, {&doc.Contact, p.Contact},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	return doc
}

func (r *Relay) encodeNIP11() ([]byte, error) {
	return json.Marshal(r.NIP11Document())
}

// serveNIP11 serves the NIP-11 document to any host (the one fail-open
// surface: clients discover auth requirements before connecting), with
// permissive CORS as NIP-11 asks.
func (r *Relay) serveNIP11(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Headers", "*")
	h.Set("Access-Control-Allow-Methods", "GET, OPTIONS")
	if req.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.Set("Content-Type", "application/nostr+json")
	if req.Method == http.MethodHead {
		return
	}
	body := r.nip11
	if r.cfg.profiles != nil || r.channels != nil {
		// A mapped host gets its community's profile and state key; any
		// other host, or a failed lookup, the relay-wide document.
		if tc, err := r.Bind(req); err == nil {
			if b, err := json.Marshal(r.documentFor(req.Context(), tc)); err == nil {
				body = b
			}
		}
	}
	_, _ = w.Write(body)
}
