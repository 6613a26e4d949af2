package nostr

// Event is a Nostr event as NIP-01 defines it.
//
// ID, PubKey and Sig are lowercase hex strings (64, 64 and 128 characters).
// An Event obtained from ParseEvent or a parsed envelope has passed the
// structural checks, but not the id or signature checks: call CheckID and a
// Verifier for those.
type Event struct {
	ID        string
	PubKey    string
	CreatedAt int64
	Kind      int
	Tags      Tags
	Content   string
	Sig       string
}

// Tag is one tag: a name followed by its values.
type Tag []string

// Tags is the ordered tag list of an event.
type Tags []Tag
