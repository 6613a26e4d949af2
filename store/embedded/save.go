package embedded

import (
	"errors"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

var errNoSuchCommunity = errors.New("sqlite: no such community")

// prepared is an event the writer stores together with SQLite rows (a
// channel command, a membership list): what can be decoded without the
// database is done on the caller's goroutine.
type prepared struct {
	community int64
	cid       tenant.CommunityID
	ev        *nostr.Event
	id        []byte
	pubkey    []byte
	createdAt int64
}

func prepare(ev *nostr.Event) (*prepared, error) {
	id, ok := nostr.DecodeHex32(ev.ID)
	if !ok {
		return nil, errors.New("sqlite: event id is not 64 lowercase hex characters")
	}
	pk, ok := nostr.DecodeHex32(ev.PubKey)
	if !ok {
		return nil, errors.New("sqlite: event pubkey is not 64 lowercase hex characters")
	}
	return &prepared{ev: ev, id: id, pubkey: pk, createdAt: ev.CreatedAt}, nil
}
