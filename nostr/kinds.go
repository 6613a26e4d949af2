package nostr

// Kinds with protocol-level meaning.
const (
	KindProfile     = 0
	KindNote        = 1
	KindContacts    = 3
	KindDeletion    = 5     // NIP-09 deletion request
	KindClientAuth  = 22242 // NIP-42 AUTH; never stored
	KindHTTPAuth    = 27235 // NIP-98 HTTP auth; never stored
	MaxKind         = 65535
	ephemeralLow    = 20000
	ephemeralHigh   = 29999
	replaceableLow  = 10000
	replaceableHigh = 19999
	addressableLow  = 30000
	addressableHigh = 39999
)

// IsEphemeral reports whether events of kind k are delivered live and never
// stored (20000–29999).
func IsEphemeral(k int) bool { return k >= ephemeralLow && k <= ephemeralHigh }

// IsReplaceable reports whether only the newest event of kind k per author is
// kept (0, 3 and 10000–19999).
func IsReplaceable(k int) bool {
	return k == KindProfile || k == KindContacts || (k >= replaceableLow && k <= replaceableHigh)
}

// IsAddressable reports whether only the newest event of kind k per author and
// "d" tag value is kept (30000–39999).
func IsAddressable(k int) bool { return k >= addressableLow && k <= addressableHigh }
