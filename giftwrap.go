package buzz

import (
	"bytes"
	"context"
	"slices"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
)

// Gift wraps (NIP-59 kind 1059) are p-gated: a stored or live gift wrap
// reaches a connection only when the connection has authenticated (NIP-42)
// as a pubkey its "p" tag names. Everyone else reads as if it did not
// exist — on REQ, COUNT and live delivery alike.
//
//   - REQ: a filter asking for kind 1059 only is narrowed to "#p" ∩ the
//     connection's pubkeys before the store query (so limits count only the
//     reader's wraps); every other filter that could match a gift wrap has
//     the wraps it returns checked one by one, and those of others dropped.
//   - COUNT: the count of the filters, minus their gift wraps, plus their
//     gift wraps addressed to the reader.
//   - A REQ or COUNT whose every filter asks for kind 1059 only, before
//     AUTH, is closed with "auth-required: …".
const kindGiftWrap = 1059

const msgGiftWrapAuth = "auth-required: gift wraps (kind 1059) are delivered only to their authenticated recipient"

// giftWrapKinds reports whether f can match a gift wrap, and whether it
// asks for gift wraps only.
func giftWrapKinds(f *nostr.Filter) (may, only bool) {
	if len(f.Kinds) == 0 {
		return true, false
	}
	if !slices.Contains(f.Kinds, kindGiftWrap) {
		return false, false
	}
	for _, k := range f.Kinds {
		if k != kindGiftWrap {
			return true, false
		}
	}
	return true, true
}

// giftWrapAuthNeeded reports whether every filter asks for gift wraps only
// while the connection has not authenticated.
func giftWrapAuthNeeded(filters []nostr.Filter, readers []string) bool {
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

// rawKindIs reports whether a stored event's JSON (as AppendJSON wrote
// it: id, pubkey, created_at, then kind) has the given kind, without
// parsing it. The first `,"kind":` is the field: nothing before it can
// hold that text.
func rawKindIs(raw []byte, kind string) bool {
	const key = `,"kind":`
	i := bytes.Index(raw, []byte(key))
	if i < 0 {
		return false
	}
	rest := raw[i+len(key):]
	return bytes.HasPrefix(rest, []byte(kind)) && len(rest) > len(kind) && rest[len(kind)] == ','
}

// giftWrapVisible reports whether a stored event may be sent to a
// connection authenticated as readers: any event but a gift wrap, and a
// gift wrap one of whose "p" tags names a reader.
func giftWrapVisible(raw []byte, readers []string) bool {
	if !rawKindIs(raw, "1059") {
		return true
	}
	if len(readers) == 0 {
		return false
	}
	ev, err := nostr.ParseEvent(raw)
	if err != nil {
		return false
	}
	return addressedTo(ev, readers)
}

// addressedTo reports whether a "p" tag of ev names one of readers.
func addressedTo(ev *nostr.Event, readers []string) bool {
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "p" && slices.Contains(readers, t[1]) {
			return true
		}
	}
	return false
}

// liveGiftWrapAllowed is liveAllowed's gift wrap rule.
func (c *conn) liveGiftWrapAllowed(ev *nostr.Event) bool {
	return ev.Kind != kindGiftWrap || addressedTo(ev, c.readers())
}

// countVisible is count with the gift wrap rule: the filters' count, minus
// their gift wraps, plus those addressed to the connection, counted as one
// bounded read.
func (c *conn) countVisible(ctx context.Context, filters []nostr.Filter, scope channel.Scope) (int64, error) {
	return countGiftWrapped(ctx, filters, c.readers(), func(ctx context.Context, sets [][]nostr.Filter) ([]int64, error) {
		return c.r.countBounded(ctx, c.tc.Community(), c, sets, scope)
	})
}

// countGiftWrapped counts filters for readers under the gift wrap rule (see
// countVisible). count counts each filter set it is given, in order: the
// total first, so a wrap stored meanwhile can only lower the answer. It is
// called once.
func countGiftWrapped(ctx context.Context, filters []nostr.Filter, readers []string,
	count func(ctx context.Context, sets [][]nostr.Filter) ([]int64, error)) (int64, error) {
	var wraps, mine []nostr.Filter
	allOnly := true
	for i := range filters {
		may, only := giftWrapKinds(&filters[i])
		allOnly = allOnly && only
		if !may {
			continue
		}
		w := filters[i]
		w.Kinds = []int{kindGiftWrap}
		wraps = append(wraps, w)
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
	if len(wraps) == 0 || allOnly {
		return ns[0], nil
	}
	var visible int64
	if len(mine) > 0 {
		visible = ns[2]
	}
	return max(ns[0]-ns[1], 0) + visible, nil
}
