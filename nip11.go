package buzz

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/buzzrelay/buzz/nip11"
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
// store/embedded and store/postgres implement it (store.ProfileStore).
type CommunityProfiles interface {
	CommunityProfile(ctx context.Context, c tenant.CommunityID) (store.CommunityProfile, error)
}

// nipEntry is one entry of the relay's NIP table: a NIP the relay
// implements, and whether it is on for a given relay.
type nipEntry struct {
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
var nipTable = [...]nipEntry{
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
func (r *Relay) NIPs() []nip11.NIP {
	own := make([]nip11.NIP, 0, len(nipTable))
	for _, n := range nipTable {
		if n.on == nil || n.on(r) {
			own = append(own, nip11.NIP{Number: n.Number, Title: n.Title})
		}
	}
	var advertised []nip11.NIP
	if r.features != nil {
		advertised = r.features.nips
	}
	return nip11.Merge(own, advertised)
}

// NIP11Document returns the document the relay serves.
func (r *Relay) NIP11Document() nip11.Document {
	l := r.cfg.limits
	i := r.cfg.info
	pub, self := i.PubKey, ""
	if r.cfg.hasRelayKey {
		self = r.cfg.relayKey.PublicKey() // the master key only: never a community's
	}
	if !nostr.IsLowerHex(pub, 64) {
		pub = self // no administrator named: the relay's own key
	}
	doc := nip11.Document{
		Name:          i.Name,
		Description:   i.Description,
		PubKey:        pub,
		Self:          self,
		Contact:       i.Contact,
		Software:      i.Software,
		Version:       i.Version,
		Icon:          i.Icon,
		SupportedNIPs: nip11.Numbers(r.NIPs()),
		Limitation: nip11.Limitation{
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
func (r *Relay) documentFor(ctx context.Context, tc tenant.TenantContext) nip11.Document {
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
	h.Set("Content-Type", nip11.MediaType)
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
