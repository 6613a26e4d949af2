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
//
// Membership notifications (44100, 44101) and DM visibility snapshots
// (30622) are p-gated (nostr.IsPGated) as gift wraps are, by the same
// functions.
//
// Author-only kinds (nostr.IsAuthorOnly: NIP-ER reminders, kind 30300, and
// Buzz's other author-only kinds) are read under the same rule with the
// author in place of the recipient — together with gift wraps, the
// private kinds (IsPrivateKind). Every function below applies both, so
// each chokepoint that gates gift wraps gates them too; besides:
//
//   - a REQ or COUNT with a filter asking for author-only kinds only is
//     refused (AuthorOnlyRefusal): with MsgAuthorOnlyAuth before
//     authentication, with MsgAuthorOnly when its authors are not all
//     readers (Buzz's rule: such a filter must name authors=[self]);
//   - a filter asking for author-only kinds only is narrowed to
//     authors ∩ readers (GiftWrapQuery); a search never matches them
//     (nostr.IsSearchable).

// Refusals of a read of author-only kinds (AuthorOnlyRefusal), as Buzz
// words them.
const (
	MsgAuthorOnlyAuth = "auth-required: author-only kinds (reminders, kind 30300) are readable only by their authenticated author"
	MsgAuthorOnly     = "restricted: author-only kinds require authors=[self]"
)

// AuthorOnlyRefusal returns the CLOSED reason for a read by readers with a
// filter asking for author-only kinds only (nostr.IsAuthorOnly), and
// whether authentication is what is missing: none authenticated, or its
// authors empty or not all among readers. "" when every filter may be
// read. It looks at the filters only, never at what is stored.
func AuthorOnlyRefusal(filters []nostr.Filter, readers []string) (reason string, needAuth bool) {
	for i := range filters {
		f := &filters[i]
		if _, only := authorOnlyKinds(f); !only {
			continue
		}
		if len(readers) == 0 {
			return MsgAuthorOnlyAuth, true
		}
		if len(f.Authors) == 0 || slices.ContainsFunc(f.Authors, func(a string) bool { return !slices.Contains(readers, a) }) {
			return MsgAuthorOnly, false
		}
	}
	return "", false
}

// MsgGiftWrapAuth refuses a read of gift wraps only before authentication.
const MsgGiftWrapAuth = "auth-required: gift wraps (kind 1059) are delivered only to their authenticated recipient"

// giftWrapKinds reports whether f can match a gift wrap, and whether it
// asks for gift wraps only. Kinds nil matches every kind; an empty,
// non-nil Kinds matches none, as nostr.Filter does.
func giftWrapKinds(f *nostr.Filter) (may, only bool) {
	return kindsOf(f, func(k int) bool { return k == nostr.KindGiftWrap })
}

// pGatedKinds reports whether f can match a p-gated kind (gift wraps,
// membership notifications: nostr.IsPGated), and whether it asks for them
// only.
func pGatedKinds(f *nostr.Filter) (may, only bool) { return kindsOf(f, nostr.IsPGated) }

// isPrivate reports whether kind k is read under the private-kind rule:
// a gift wrap (p-gated) or an author-only kind (nostr.IsAuthorOnly).
func isPrivate(k int) bool { return nostr.IsPGated(k) || nostr.IsAuthorOnly(k) }

// privateKinds reports whether f can match an event of a private kind,
// and whether it asks for private kinds only.
func privateKinds(f *nostr.Filter) (may, only bool) { return kindsOf(f, isPrivate) }

// authorOnlyKinds reports whether f can match an author-only kind, and
// whether it asks for author-only kinds only.
func authorOnlyKinds(f *nostr.Filter) (may, only bool) { return kindsOf(f, nostr.IsAuthorOnly) }

// kindsOf reports whether f can match a kind in the set in, and whether
// every kind it asks for is in it.
func kindsOf(f *nostr.Filter, in func(int) bool) (may, only bool) {
	if f.Kinds == nil {
		return true, false
	}
	only = len(f.Kinds) > 0
	for _, k := range f.Kinds {
		if in(k) {
			may = true
		} else {
			only = false
		}
	}
	return may, only && may
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
// the private-kind rule (gift wraps and author-only kinds): q is the
// filter to ask the store — f itself; or, when f asks for gift wraps only,
// f with its "#p" narrowed to readers; or, when f asks for author-only
// kinds only, f with its authors narrowed to readers — and check reports
// whether each event the store returns must still pass GiftWrapVisibleRaw
// (f may match others' private events). ok is false when f can return
// nothing to readers.
func GiftWrapQuery(f nostr.Filter, readers []string) (q nostr.Filter, check, ok bool) {
	may, only := privateKinds(&f)
	if !only {
		return f, may, true
	}
	if len(readers) == 0 {
		return f, false, false
	}
	if _, wrapsOnly := pGatedKinds(&f); wrapsOnly {
		q, ok = narrowToReaders(f, readers)
		return q, false, ok
	}
	if _, authorOnly := authorOnlyKinds(&f); authorOnly {
		q, ok = narrowAuthors(f, readers)
		return q, false, ok
	}
	return f, true, true
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

// narrowAuthors returns f with its authors restricted to readers (set to
// readers when f names none), and false when nothing is left.
func narrowAuthors(f nostr.Filter, readers []string) (nostr.Filter, bool) {
	var as []string
	if f.Authors != nil {
		for _, a := range f.Authors {
			if slices.Contains(readers, a) && !slices.Contains(as, a) {
				as = append(as, a)
			}
		}
	} else {
		as = append(as, readers...)
	}
	if len(as) == 0 {
		return f, false
	}
	f.Authors = as
	return f, true
}

// GiftWrapVisible reports whether ev may reach a reader authenticated as
// readers: any event of a kind that is not private; an event of an
// author-only kind (nostr.IsAuthorOnly) only when a reader is its author;
// a gift wrap one of whose "p" tags names a reader.
func GiftWrapVisible(ev *nostr.Event, readers []string) bool {
	if nostr.IsAuthorOnly(ev.Kind) {
		return slices.Contains(readers, ev.PubKey)
	}
	if !nostr.IsPGated(ev.Kind) {
		return true
	}
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "p" && slices.Contains(readers, t[1]) {
			return true
		}
	}
	return false
}

// privateKindTexts are the kind field's values in private events' JSON:
// the gift wrap's and the author-only kinds'.
var privateKindTexts = [][]byte{
	[]byte(strconv.Itoa(nostr.KindGiftWrap)),
	[]byte(strconv.Itoa(nostr.KindReminder)),
	[]byte(strconv.Itoa(nostr.KindPushLease)),
	[]byte(strconv.Itoa(nostr.KindPrivateManagedAgent)),
	[]byte(strconv.Itoa(nostr.KindMemberAdded)),
	[]byte(strconv.Itoa(nostr.KindMemberRemoved)),
	[]byte(strconv.Itoa(nostr.KindDMVisibility)),
}

// GiftWrapVisibleRaw is GiftWrapVisible for a stored event's JSON (as
// store.Record.Raw holds it, written by nostr.Event.AppendJSON): an event
// of a kind that is not private is recognised without being parsed; one
// that does not parse is not visible.
func GiftWrapVisibleRaw(raw []byte, readers []string) bool {
	if !slices.ContainsFunc(privateKindTexts, func(k []byte) bool { return rawKindIs(raw, k) }) {
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

// GiftWrapPart is the part of filters that may match private events (gift
// wraps and author-only kinds), as CountGiftWrapped asks a store to count
// it right after filters: each filter that may match a private kind, in
// order, narrowed to the private kinds it asks for (all of them when it
// names no kinds); nil when none may. Its count is the count of filters'
// events of private kinds (IsPrivateKind), so a store answering several
// sets at once may recognise the pair and count both in one pass over
// filters' events.
func GiftWrapPart(filters []nostr.Filter) []nostr.Filter {
	var part []nostr.Filter
	for i := range filters {
		if may, _ := privateKinds(&filters[i]); may {
			w := filters[i]
			w.Kinds = privateOf(w.Kinds)
			part = append(part, w)
		}
	}
	return part
}

// PrivateKinds are the kinds read under the private-kind rule, ascending:
// the gift wrap (p-gated) and the author-only kinds.
var PrivateKinds = []int{nostr.KindGiftWrap, nostr.KindPrivateManagedAgent, nostr.KindReminder, nostr.KindPushLease,
	nostr.KindDMVisibility, nostr.KindMemberAdded, nostr.KindMemberRemoved}

// IsPrivateKind reports whether events of kind k reach only some readers:
// a gift wrap its recipient, an author-only kind its author.
func IsPrivateKind(k int) bool { return isPrivate(k) }

// privateOf returns the private kinds among kinds (every private kind when
// kinds is nil), in PrivateKinds order.
func privateOf(kinds []int) []int {
	var out []int
	for _, k := range PrivateKinds {
		if kinds == nil || slices.Contains(kinds, k) {
			out = append(out, k)
		}
	}
	return out
}

// mineOf returns the filters counting readers' own private events of part
// (GiftWrapPart's filters): for each, its gift wraps addressed to readers
// and its author-only events by readers.
func mineOf(part []nostr.Filter, readers []string) []nostr.Filter {
	var mine []nostr.Filter
	for _, w := range part {
		var wraps, own []int
		for _, k := range w.Kinds {
			if nostr.IsPGated(k) {
				wraps = append(wraps, k)
			} else {
				own = append(own, k)
			}
		}
		if len(wraps) > 0 {
			f := w
			f.Kinds = wraps
			if m, ok := narrowToReaders(f, readers); ok {
				mine = append(mine, m)
			}
		}
		if len(own) > 0 {
			f := w
			f.Kinds = own
			if m, ok := narrowAuthors(f, readers); ok {
				mine = append(mine, m)
			}
		}
	}
	return mine
}

// CountGiftWrapped counts filters for readers under the private-kind rule:
// the filters' count, minus their private events, plus those of them
// readers may read (gift wraps addressed to them, author-only events they
// wrote). It calls count once, with up to three filter sets to count each
// of, in order (the store's count under the read's Scope; in one round
// trip where the store can answer several sets): the total first, so a
// private event stored meanwhile can only lower the answer.
func CountGiftWrapped(ctx context.Context, filters []nostr.Filter, readers []string,
	count func(ctx context.Context, sets [][]nostr.Filter) ([]int64, error)) (int64, error) {
	allOnly := true
	for i := range filters {
		_, only := privateKinds(&filters[i])
		allOnly = allOnly && only
	}
	wraps := GiftWrapPart(filters)
	mine := mineOf(wraps, readers)
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
