package buzz

import (
	"net/http"

	"github.com/buzzrelay/buzz/tenant"
)

// CommunityHandlerFunc serves one HTTP request already bound to the
// community its Host selects. tc is never zero.
type CommunityHandlerFunc func(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext)

// HandleCommunity registers h on Mux for pattern (net/http.ServeMux syntax,
// e.g. "POST /query") as a tenant route: the request's Host is bound to its
// community first, exactly as a WebSocket upgrade is, and a request whose
// host selects no community — unmapped, malformed, or a failed lookup —
// gets the relay's fixed answer (HTTP 404 "relay: no community is
// configured for this host") and never reaches h. Handlers must scope every
// lookup by tc.Community(): a foreign id must behave like a random one.
//
// It is the one place per-community HTTP routes are mounted; packages that
// serve routes on community hosts (the NIP-98 HTTP API, features through
// Host.HandleCommunity, …) register through it. It panics, like ServeMux.Handle, on an invalid or conflicting
// pattern.
func (r *Relay) HandleCommunity(pattern string, h CommunityHandlerFunc) {
	r.mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
		tc, err := r.Bind(req)
		if err != nil {
			r.log.DebugContext(req.Context(), "buzz: HTTP request refused: host not bound", "err", err)
			http.Error(w, tenant.ErrUnmappedHost.Error(), http.StatusNotFound)
			return
		}
		h(w, req, tc)
	})
}
