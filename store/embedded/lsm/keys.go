package lsm

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// The key layout. Every key starts with a one-byte prefix naming its index;
// integers are big-endian so that byte order is numeric order, and
// created_at is stored inverted (^created_at) so that a forward scan yields
// the newest events first. cseq is the community's 4-byte sequence number
// from the registry; seq is the event's 8-byte sequence number, unique in
// the store and never reused.
//
// Indexes of live events:
//
//	'e' seq                                  → record (header + raw JSON)
//	'i' cseq id                              → seq
//	'c' cseq kind pubkey d                   → seq of the coordinate's live version
//	'x' expires_at seq                       (empty) NIP-40 expiry, every community
//
// and the timelines, whose values are the event's meta (kind, expiry,
// channel: what a query checks besides the key) so that a query reads a
// record only to return it or to match what only the event's body holds:
//
//	't' cseq ^created_at seq                 community timeline
//	'k' cseq kind ^created_at seq            kind timeline
//	'a' cseq pubkey ^created_at seq          author timeline
//	'A' cseq pubkey kind ^created_at seq     author-and-kind timeline
//	'g' cseq name len(value) value ^created_at seq   one per store.IndexedTag
//	'h' cseq channel ^created_at seq         channel timeline
//
// NIP-09 state, kept after the events it removed:
//
//	'd' cseq id pubkey                       tombstone: refused for that author
//	'w' cseq kind pubkey d                   → deleted_up_to (8 bytes)
//
// Reaction slots (NIP-25, as Buzz keeps them: one live reaction per author,
// target event and emoji), written and removed with the reaction holding
// the slot:
//
//	'r' cseq pubkey target emoji             → seq of the holder
//
// The community registry:
//
//	'H' host                                 → cseq (4) + community id (16)
//	'C' cseq                                 → community id (16) + host
//	'U' community id                         → cseq
const (
	pEvent       = 'e'
	pID          = 'i'
	pTime        = 't'
	pKind        = 'k'
	pAuthor      = 'a'
	pAuthKind    = 'A'
	pTag         = 'g'
	pChannel     = 'h'
	pCoord       = 'c'
	pExpiry      = 'x'
	pTombstone   = 'd'
	pWater       = 'w'
	pReaction    = 'r'
	pHost        = 'H'
	pCommunity   = 'C'
	pCommunityID = 'U'
	// pFormat holds the layout's version; Open refuses a store written
	// with another.
	pFormat = 'V'
)

// formatVersion is the key layout above. A change to it gets a new number
// and a conversion in Open. Version 2 added the reaction slots; Open
// converts a version 1 store by writing the slots of its live reactions.
const formatVersion = 2

// key builds keys by appending.
type key []byte

func newKey(prefix byte, capacity int) key {
	k := make(key, 1, capacity)
	k[0] = prefix
	return k
}

func (k key) u32(v uint32) key   { return binary.BigEndian.AppendUint32(k, v) }
func (k key) u64(v uint64) key   { return binary.BigEndian.AppendUint64(k, v) }
func (k key) bytes(b []byte) key { return append(k, b...) }

// desc appends ^createdAt: later times sort first. created_at is never
// negative in a stored event (the parser refuses it), so the full uint64
// range orders correctly.
func (k key) desc(createdAt int64) key { return k.u64(^uint64(createdAt)) }

// str appends s with its length first, so that no value's key is a prefix
// of another value's.
func (k key) str(s string) key { return append(k.u32(uint32(len(s))), s...) }

// Index key constructors shared by Save, removal and the query planner. The
// prefix forms (without ^created_at and seq) are what queries scan.

func idKey(cseq uint32, id []byte) key { return newKey(pID, 37).u32(cseq).bytes(id) }

func timePrefix(cseq uint32) key { return newKey(pTime, 21).u32(cseq) }

func kindPrefix(cseq uint32, kind int) key { return newKey(pKind, 25).u32(cseq).u32(uint32(kind)) }

func authorPrefix(cseq uint32, pubkey []byte) key {
	return newKey(pAuthor, 53).u32(cseq).bytes(pubkey)
}

func authorKindPrefix(cseq uint32, pubkey []byte, kind int) key {
	return newKey(pAuthKind, 57).u32(cseq).bytes(pubkey).u32(uint32(kind))
}

func tagPrefix(cseq uint32, name byte, value string) key {
	return append(newKey(pTag, 26+len(value)).u32(cseq), name).str(value)
}

func channelPrefix(cseq uint32, ch []byte) key {
	return newKey(pChannel, 37).u32(cseq).bytes(ch)
}

func coordKey(cseq uint32, kind int, pubkey []byte, d string) key {
	return newKey(pCoord, 45+len(d)).u32(cseq).u32(uint32(kind)).bytes(pubkey).str(d)
}

func waterKey(cseq uint32, kind int, pubkey []byte, d string) key {
	return newKey(pWater, 45+len(d)).u32(cseq).u32(uint32(kind)).bytes(pubkey).str(d)
}

func tombstoneKey(cseq uint32, id, pubkey []byte) key {
	return newKey(pTombstone, 69).u32(cseq).bytes(id).bytes(pubkey)
}

func reactionKey(cseq uint32, pubkey, target []byte, emoji string) key {
	return newKey(pReaction, 69+len(emoji)).u32(cseq).bytes(pubkey).bytes(target).bytes([]byte(emoji))
}

func expiryKey(expiresAt int64, seq uint64) key {
	return newKey(pExpiry, 17).u64(uint64(expiresAt)).u64(seq)
}

func eventKey(seq uint64) key { return newKey(pEvent, 9).u64(seq) }

// entry appends the timeline suffix of an index entry to a prefix.
func entry(prefix key, createdAt int64, seq uint64) key {
	k := make(key, len(prefix), len(prefix)+16)
	copy(k, prefix)
	return k.desc(createdAt).u64(seq)
}

// suffix reads the timeline suffix of an index entry: the last 16 bytes.
func suffix(k []byte) (createdAt int64, seq uint64) {
	n := len(k)
	return int64(^binary.BigEndian.Uint64(k[n-16 : n-8])), binary.BigEndian.Uint64(k[n-8:])
}

// prefixEnd is the smallest key after every key starting with p (nil when
// there is none, i.e. p is all 0xff), in a new slice.
func prefixEnd(p []byte) []byte { return successor(append([]byte(nil), p...)) }

// successor is prefixEnd computed in k itself, for a key the caller owns.
func successor(k []byte) []byte {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] < 0xff {
			k[i]++
			return k[:i+1]
		}
	}
	return nil
}

// header is what a record holds besides the raw event: the fields the
// query planner checks without parsing JSON, and what removal needs to find
// every index entry of the event.
type header struct {
	cseq      uint32
	id        [32]byte
	pubkey    [32]byte
	createdAt int64
	kind      int
	expiresAt int64 // when hasExpiry
	hasExpiry bool
	channel   [16]byte // when hasChan
	hasChan   bool
}

const (
	flagChannel = 1 << iota
	flagExpiry
)

// headerLen is a record's fixed part: cseq, id, pubkey, created_at, kind,
// expires_at, a flags byte and the channel.
const headerLen = 4 + 32 + 32 + 8 + 4 + 8 + 1 + 16

func (h *header) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, h.cseq)
	b = append(b, h.id[:]...)
	b = append(b, h.pubkey[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(h.createdAt))
	b = binary.BigEndian.AppendUint32(b, uint32(h.kind))
	b = binary.BigEndian.AppendUint64(b, uint64(h.expiresAt))
	var flags byte
	if h.hasChan {
		flags |= flagChannel
	}
	if h.hasExpiry {
		flags |= flagExpiry
	}
	b = append(b, flags)
	return append(b, h.channel[:]...)
}

// metaValue is a timeline entry's value: flags, the kind (two bytes), then
// expires_at (eight) when flagExpiry is set and the channel (sixteen) when
// flagChannel is.
func (h *header) metaValue() []byte {
	var flags byte
	n := 3
	if h.hasChan {
		flags |= flagChannel
		n += 16
	}
	if h.hasExpiry {
		flags |= flagExpiry
		n += 8
	}
	b := make([]byte, 0, n)
	b = append(b, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(h.kind))
	if h.hasExpiry {
		b = binary.BigEndian.AppendUint64(b, uint64(h.expiresAt))
	}
	if h.hasChan {
		b = append(b, h.channel[:]...)
	}
	return b
}

// decodeMeta reads a metaValue into the matching fields of h.
func decodeMeta(v []byte, h *header) error {
	if len(v) < 3 {
		return fmt.Errorf("%w: index value of %d bytes", errCorrupt, len(v))
	}
	flags := v[0]
	h.kind = int(binary.BigEndian.Uint16(v[1:]))
	v = v[3:]
	h.hasExpiry, h.hasChan = flags&flagExpiry != 0, flags&flagChannel != 0
	if h.hasExpiry {
		if len(v) < 8 {
			return fmt.Errorf("%w: index value too short for its expiry", errCorrupt)
		}
		h.expiresAt = int64(binary.BigEndian.Uint64(v))
		v = v[8:]
	}
	if h.hasChan {
		if len(v) < 16 {
			return fmt.Errorf("%w: index value too short for its channel", errCorrupt)
		}
		copy(h.channel[:], v)
	}
	return nil
}

var errCorrupt = errors.New("lsm: corrupt record")

// decodeRecord splits a record into its header and raw JSON. raw aliases
// rec.
func decodeRecord(rec []byte) (h header, raw []byte, err error) {
	if len(rec) < headerLen {
		return h, nil, fmt.Errorf("%w (%d bytes)", errCorrupt, len(rec))
	}
	h.cseq = binary.BigEndian.Uint32(rec)
	copy(h.id[:], rec[4:36])
	copy(h.pubkey[:], rec[36:68])
	h.createdAt = int64(binary.BigEndian.Uint64(rec[68:76]))
	h.kind = int(binary.BigEndian.Uint32(rec[76:80]))
	h.expiresAt = int64(binary.BigEndian.Uint64(rec[80:88]))
	h.hasChan = rec[88]&flagChannel != 0
	h.hasExpiry = rec[88]&flagExpiry != 0
	copy(h.channel[:], rec[89:105])
	return h, rec[headerLen:], nil
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
