package channel

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/buzzrelay/buzz/nostr"
)

// Gift wraps.
//
// The one read rule that is not a channel's: a gift wrap (NIP-59, kind
// nostr.KindGiftWrap) reaches a reader only when the reader authenticated
// as a pubkey its "p" tag names. Everyone else reads as if it did not
// exist — stored reads, counts and live delivery alike. A frontend applies
// it to stored reads and counts besides its Reader's channel rules, with
// the readers it authenticated (Reader.Readers); Reader.Deliverable applies
// it to live events itself:
//
//   - a REQ or COUNT whose every filter asks for gift wraps only, before
//     authentication, is refused with MsgGiftWrapAuth (GiftWrapAuthNeeded);
//   - a stored read asks the store for GiftWrapQuery's filter (a filter
//     asking for gift wraps only is narrowed to "#p" ∩ readers, so limits
//     count only the reader's wraps) and, when told to check, drops each
//     event GiftWrapVisibleRaw refuses;
//   - a count goes through CountGiftWrapped;
//   - a live event is delivered only when GiftWrapVisible allows it, as
//     Reader.Deliverable checks.

// MsgGiftWrapAuth refuses a read of gift wraps only before authentication.
const MsgGiftWrapAuth = "auth-required: gift wraps (kind 1059) are delivered only to their authenticated recipient"

// giftWrapKinds reports whether f can match a gift wrap, and whether it
// asks for gift wraps only. Kinds nil matches every kind; an empty,
// non-nil Kinds matches none, as nostr.Filter does.
func giftWrapKinds(f *nostr.Filter) (may, only bool) {
	if f.Kinds == nil {
		return true, false
	}
	if !slices.Contains(f.Kinds, nostr.KindGiftWrap) {
		return false, false
	}
	for _, k := range f.Kinds {
		if k != nostr.KindGiftWrap {
			return true, false
		}
	}
	return true, true
}

// GiftWrapAuthNeeded reports whether a read by readers must be refused with
// MsgGiftWrapAuth: none authenticated, and every filter asks for gift
// wraps only.
func GiftWrapAuthNeeded(filters []nostr.Filter, readers []string) bool {
	if len(readers) > 0 {
		return false
	}
	for i := range filters {
		if _, only := giftWrapKinds(&filters[i]); !only {
			return false
		}
	}
	return true
}

// GiftWrapQuery returns how to read f's stored events for readers under
// the gift wrap rule: q is the filter to ask the store — f itself, or,
// when f asks for gift wraps only, f with its "#p" narrowed to readers —
// and check reports whether each event the store returns must still pass
// GiftWrapVisibleRaw (f may match others' wraps). ok is false when f can
// return nothing to readers (gift wraps only, addressed to none of them).
func GiftWrapQuery(f nostr.Filter, readers []string) (q nostr.Filter, check, ok bool) {
	may, only := giftWrapKinds(&f)
	if !only {
		return f, may, true
	}
	q, ok = narrowToReaders(f, readers)
	return q, false, ok
}

// narrowToReaders returns f with its "#p" condition restricted to readers
// (set to readers when f has none), and false when nothing is left.
func narrowToReaders(f nostr.Filter, readers []string) (nostr.Filter, bool) {
	var ps []string
	if want, has := f.Tags["p"]; has {
		for _, p := range want {
			if slices.Contains(readers, p) && !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		}
	} else {
		ps = append(ps, readers...)
	}
	if len(ps) == 0 {
		return f, false
	}
	tags := make(map[string][]string, len(f.Tags)+1)
	for k, v := range f.Tags {
		tags[k] = v
	}
	tags["p"] = ps
	f.Tags = tags
	return f, true
}

// GiftWrapVisible reports whether ev may reach a reader authenticated as
// readers: any event but a gift wrap, and a gift wrap one of whose "p"
// tags names a reader.
func GiftWrapVisible(ev *nostr.Event, readers []string) bool {
	if ev.Kind != nostr.KindGiftWrap {
		return true
	}
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "p" && slices.Contains(readers, t[1]) {
			return true
		}
	}
	return false
}

// giftWrapKindText is the kind field's value in a gift wrap's JSON.
var giftWrapKindText = []byte(strconv.Itoa(nostr.KindGiftWrap))

// GiftWrapVisibleRaw is GiftWrapVisible for a stored event's JSON (as
// store.Record.Raw holds it, written by nostr.Event.AppendJSON): an event
// that is not a gift wrap is recognised without being parsed; one that
// does not parse is not visible.
func GiftWrapVisibleRaw(raw []byte, readers []string) bool {
	if !rawKindIs(raw, giftWrapKindText) {
		return true
	}
	if len(readers) == 0 {
		return false
	}
	ev, err := nostr.ParseEvent(raw)
	if err != nil {
		return false
	}
	return GiftWrapVisible(ev, readers)
}

// rawKindIs reports whether an event's JSON as AppendJSON writes it (id,
// pubkey, created_at, then kind) has the given kind. The first `,"kind":`
// is the field: nothing before it can hold that text.
func rawKindIs(raw, kind []byte) bool {
	const key = `,"kind":`
	i := bytes.Index(raw, []byte(key))
	if i < 0 {
		return false
	}
	rest := raw[i+len(key):]
	return bytes.HasPrefix(rest, kind) && len(rest) > len(kind) && rest[len(kind)] == ','
}

// GiftWrapPart is the part of filters that may match gift wraps, as
// CountGiftWrapped asks a store to count it right after filters: each
// filter that may match kind 1059, in order, narrowed to kind 1059; nil
// when none may. Its count is the count of filters' events of kind 1059,
// so a store answering several sets at once may recognise the pair and
// count both in one pass over filters' events.
func GiftWrapPart(filters []nostr.Filter) []nostr.Filter {
	var part []nostr.Filter
	for i := range filters {
		if may, _ := giftWrapKinds(&filters[i]); may {
			w := filters[i]
			w.Kinds = []int{nostr.KindGiftWrap}
			part = append(part, w)
		}
	}
	return part
}

// CountGiftWrapped counts filters for readers under the gift wrap rule:
// the filters' count, minus their gift wraps, plus the gift wraps
// addressed to readers. It calls count once, with up to three filter sets
// to count each of, in order (the store's count under the read's Scope;
// in one round trip where the store can answer several sets): the total
// first, so a wrap stored meanwhile can only lower the answer.
func CountGiftWrapped(ctx context.Context, filters []nostr.Filter, readers []string,
	count func(ctx context.Context, sets [][]nostr.Filter) ([]int64, error)) (int64, error) {
	allOnly := true
	for i := range filters {
		_, only := giftWrapKinds(&filters[i])
		allOnly = allOnly && only
	}
	wraps := GiftWrapPart(filters)
	var mine []nostr.Filter
	for _, w := range wraps {
		if m, ok := narrowToReaders(w, readers); ok {
			mine = append(mine, m)
		}
	}
	var sets [][]nostr.Filter
	switch {
	case len(wraps) == 0:
		sets = [][]nostr.Filter{filters}
	case allOnly && len(mine) == 0:
		return 0, nil
	case allOnly:
		sets = [][]nostr.Filter{mine}
	default:
		sets = [][]nostr.Filter{filters, wraps}
		if len(mine) > 0 {
			sets = append(sets, mine)
		}
	}
	ns, err := count(ctx, sets)
	if err != nil {
		return 0, err
	}
	if len(ns) != len(sets) {
		return 0, fmt.Errorf("channel: CountGiftWrapped: %d counts for %d filter sets", len(ns), len(sets))
	}
	if len(wraps) == 0 || allOnly {
		return ns[0], nil
	}
	var visible int64
	if len(mine) > 0 {
		visible = ns[2]
	}
	return max(ns[0]-ns[1], 0) + visible, nil
}
