package buzz

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"

	"github.com/buzzrelay/buzz/tenant"
)

// WithTrustedProxies names the reverse proxies whose X-Forwarded-For header
// the relay believes (see Relay.ClientAddr). Without it the header is
// ignored: any client could otherwise claim any address and escape the
// per-address limits.
func WithTrustedProxies(prefixes ...netip.Prefix) Option {
	return func(c *config) error {
		for _, p := range prefixes {
			if !p.IsValid() {
				return errors.New("buzz: WithTrustedProxies: invalid prefix")
			}
			c.trustedProxies = append(c.trustedProxies, p.Masked())
		}
		return nil
	}
}

// ClientAddr returns the address of the client that sent req: the
// request's remote address, unless that is a trusted proxy (see
// WithTrustedProxies), in which case the X-Forwarded-For entries are read
// from the right — the ones the trusted proxies appended — and the first
// address that is not a trusted proxy is the client. An unparsable entry
// stops the walk at the last address believed. It is the one definition of
// "the client's address" for the relay's admission limits; HTTP handlers
// registered on Mux may use it for theirs.
func (r *Relay) ClientAddr(req *http.Request) netip.Addr {
	return clientAddr(req, r.cfg.trustedProxies)
}

func clientAddr(req *http.Request, trusted []netip.Prefix) netip.Addr {
	addr := remoteAddr(req.RemoteAddr)
	if len(trusted) == 0 || !isTrusted(addr, trusted) {
		return addr
	}
	var hops []string
	for _, v := range req.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return addr
		}
		addr = a.Unmap()
		if !isTrusted(addr, trusted) {
			return addr
		}
	}
	return addr
}

func remoteAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// admission counts open connections against Limits.MaxConnections,
// MaxConnectionsPerAddress and MaxCommunityConnections.
type admission struct {
	mu          sync.Mutex
	total       int
	byAddr      map[netip.Addr]int
	byCommunity map[tenant.CommunityID]int
}

// Refusals of an upgrade.
var (
	errTooManyConns     = errors.New("relay: too many connections; try again later")
	errTooManyFromAddr  = errors.New("relay: too many connections from your address")
	errTooManyCommunity = errors.New("relay: too many connections to this community; try again later")
)

// admit reserves a connection for address a in community c, or says why
// not: errTooManyFromAddr (HTTP 429) or another error (HTTP 503). A nil
// error must be paired with a call to leave.
func (ad *admission) admit(l *Limits, a netip.Addr, c tenant.CommunityID) error {
	ad.mu.Lock()
	defer ad.mu.Unlock()
	switch {
	case ad.total >= l.MaxConnections:
		return errTooManyConns
	case ad.byAddr[a] >= l.MaxConnectionsPerAddress:
		return errTooManyFromAddr
	case l.MaxCommunityConnections > 0 && ad.byCommunity[c] >= l.MaxCommunityConnections:
		return errTooManyCommunity
	}
	if ad.byAddr == nil {
		ad.byAddr = make(map[netip.Addr]int)
		ad.byCommunity = make(map[tenant.CommunityID]int)
	}
	ad.total++
	ad.byAddr[a]++
	ad.byCommunity[c]++
	return nil
}

// leave releases what admit reserved.
func (ad *admission) leave(a netip.Addr, c tenant.CommunityID) {
	ad.mu.Lock()
	defer ad.mu.Unlock()
	ad.total--
	if ad.byAddr[a]--; ad.byAddr[a] <= 0 {
		delete(ad.byAddr, a)
	}
	if ad.byCommunity[c]--; ad.byCommunity[c] <= 0 {
		delete(ad.byCommunity, c)
	}
}

// refuseUpgrade answers an upgrade refused by admission: 429 for the
// per-address limit, 503 otherwise, with Retry-After.
// admissionReason names an admission refusal for the log.
func admissionReason(err error) string {
	switch {
	case errors.Is(err, errTooManyFromAddr):
		return "too_many_from_address"
	case errors.Is(err, errTooManyCommunity):
		return "too_many_in_community"
	case errors.Is(err, errTooManyConns):
		return "too_many_connections"
	}
	return "admission"
}

func refuseUpgrade(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "5")
	code := http.StatusServiceUnavailable
	if errors.Is(err, errTooManyFromAddr) {
		code = http.StatusTooManyRequests
	}
	http.Error(w, err.Error(), code)
}
