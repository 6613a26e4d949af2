// Package nip11 is the NIP-11 relay information document: the JSON a relay
// serves on its WebSocket URL to an HTTP request that accepts MediaType.
//
// It holds the document's types, whose JSON is the wire format, and the
// pure helpers that assemble a document's list of NIPs and recognise a
// NIP-11 request. It knows nothing of a relay: package buzz fills a
// Document from its options, limits and features and serves it
// (Relay.NIP11Document, Host.Document), and features add their NIPs with
// Host.Advertise. It imports no other package of buzz.
package nip11

import (
	"net/http"
	"slices"
	"strings"
)

// MediaType is the media type of the document: a request whose Accept
// header names it asks for the document instead of a WebSocket upgrade or a
// page, and the document is served with it as Content-Type.
const MediaType = "application/nostr+json"

// Document is the NIP-11 relay information document.
type Document struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	PubKey      string `json:"pubkey,omitempty"`
	// Self is the relay's own key, which NIP-11 names "self": for a
	// community's host (with channels) the key that signs that community's
	// NIP-29 group state, derived from the relay key; in the relay-wide
	// document, the relay key itself (buzz.WithRelayKey).
	Self     string `json:"self,omitempty"`
	Contact  string `json:"contact,omitempty"`
	Software string `json:"software,omitempty"`
	Version  string `json:"version,omitempty"`
	Icon     string `json:"icon,omitempty"`
	// SupportedNIPs are the numbers of the NIPs the relay implements, in
	// ascending order (Numbers of the relay's NIPs).
	SupportedNIPs []int `json:"supported_nips"`
	// SupportedExtensions names draft extensions without a NIP number:
	// "nip-er" (event reminders, kind 30300) when the store keeps reminders.
	SupportedExtensions []string   `json:"supported_extensions,omitempty"`
	Limitation          Limitation `json:"limitation"`
}

// Limitation is the "limitation" object of a Document. A relay fills every
// value from the limits it enforces.
type Limitation struct {
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

// NIP is a NIP a relay implements and what it gives a client: the number
// listed in supported_nips and a title for people (the home page lists
// both).
type NIP struct {
	Number int
	Title  string // what the NIP is, for people ("Relay-based groups")
}

// Merge returns the NIPs of lists, each number once, in ascending order of
// number. Where a number appears more than once, the first entry (in the
// order of lists, then within a list) is kept, title included. The
// arguments are not modified.
func Merge(lists ...[]NIP) []NIP {
	var out []NIP
	for _, l := range lists {
		for _, n := range l {
			if !slices.ContainsFunc(out, func(m NIP) bool { return m.Number == n.Number }) {
				out = append(out, n)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b NIP) int { return a.Number - b.Number })
	return out
}

// Numbers returns the numbers of nips, in their order: a Document's
// SupportedNIPs.
func Numbers(nips []NIP) []int {
	out := make([]int, len(nips))
	for i, n := range nips {
		out[i] = n.Number
	}
	return out
}

// Requested reports whether a request with header h asks for the
// document: one of its Accept headers names MediaType (in any case, as
// media types are), whatever else it names.
func Requested(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		if strings.Contains(strings.ToLower(v), MediaType) {
			return true
		}
	}
	return false
}
