// Package threads serves the metadata of NIP-10 threads as a feature
// mounted on a relay (buzz.WithFeature(threads.New())). The relay's store
// must keep threads and channels (store.ThreadStore, store.ChannelStore;
// both store/embedded and store/postgres do) and the relay must authenticate
// HTTP requests (buzz.WithHTTPAuth).
//
// The store records every reply — a chat message (kind 9) or a Buzz
// message kind (40002–40008) in a channel, with a NIP-10 "reply" marker —
// and keeps each thread's counters in the transaction that stores or
// deletes a reply; the relay's ingest refuses a reply whose parent is not
// a message of its channel, whose root tag is not its parent's thread
// root, or that would sit deeper than store.MaxThreadDepth. This package
// is the read side. Every community host serves, NIP-98-authenticated:
//
//	GET /threads/{id}
//
// answering 200 with the thread below message id, read from the thread's
// own rows (never by scanning the channel):
//
//	{"id": "<id>", "h": "<channel>", "root": "<thread root>", "depth": 0,
//	 "reply_count": 2, "descendant_count": 5, "last_reply_at": 1700000000,
//	 "participants": ["<pubkey>", …]}
//
// reply_count, descendant_count, last_reply_at (null when there is no
// reply) and participants (at most 10, most recent reply first) are the
// content of Buzz's thread summary (kind 39005); root and depth place id
// itself (id and 0 for a message that is not a reply). The signer must be
// admitted to the community (403 with the refusal otherwise) and able to
// read the message's channel: a message of a channel the signer may not
// read, of another community, not stored, or not a message of a channel,
// is 404 not_found alike.
package threads

import (
	"context"
	"errors"
	"net/http"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/apitoken"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/apijson"
	"github.com/buzzrelay/buzz/nip11"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Path is the route of the feature on every community host.
const Path = "/threads/{id}"

// Feature is thread metadata mounted on a relay. Create it with New.
type Feature struct {
	h        buzz.Host
	threads  store.ThreadStore
	channels store.ChannelStore
}

// New returns the threads feature, to mount with buzz.WithFeature.
func New() *Feature { return &Feature{} }

// Mount implements buzz.Feature: it needs a store that keeps threads and
// channels, and a relay that authenticates HTTP requests.
func (f *Feature) Mount(h buzz.Host) error {
	ts, ok := h.Store().(store.ThreadStore)
	if !ok {
		return errors.New("threads: the relay's store keeps no threads (store.ThreadStore)")
	}
	cs, ok := h.Store().(store.ChannelStore)
	if !ok {
		return errors.New("threads: the relay's store keeps no channels (store.ChannelStore)")
	}
	if !h.HTTPAuth() {
		return errors.New("threads: the relay authenticates no HTTP requests (buzz.WithHTTPAuth)")
	}
	f.h, f.threads, f.channels = h, ts, cs
	h.Advertise(nip11.NIP{Number: 10, Title: "Threads (marked e tags; thread metadata at GET /threads/{id})"})
	h.HandleCommunity("GET "+Path, f.serveSummary)
	return nil
}

// Summary is the answer of GET /threads/{id}.
type Summary struct {
	ID              string   `json:"id"`
	Channel         string   `json:"h"`
	Root            string   `json:"root"`
	Depth           int      `json:"depth"`
	ReplyCount      int64    `json:"reply_count"`
	DescendantCount int64    `json:"descendant_count"`
	LastReplyAt     *int64   `json:"last_reply_at"`
	Participants    []string `json:"participants"`
}

const msgNotFound = "invalid: no such message"

func (f *Feature) serveSummary(w http.ResponseWriter, req *http.Request, tc tenant.TenantContext) {
	caller, ok := f.h.AuthenticateHTTP(w, req, tc, apitoken.MessagesRead)
	if !ok {
		return
	}
	signer := caller.PubKey
	ctx, c := req.Context(), tc.Community()
	if refusal, err := f.h.Admitted(ctx, tc, signer); err != nil {
		f.internalError(w, req, "admission", err)
		return
	} else if refusal != "" {
		apijson.Error(w, http.StatusForbidden, "restricted", refusal)
		return
	}
	id := req.PathValue("id")
	if !nostr.IsLowerHex(id, 64) {
		apijson.Error(w, http.StatusNotFound, "not_found", msgNotFound)
		return
	}
	ch, found, err := f.readableMessage(ctx, c, id, signer)
	if err != nil {
		f.internalError(w, req, "message", err)
		return
	}
	if !found {
		apijson.Error(w, http.StatusNotFound, "not_found", msgNotFound)
		return
	}
	out := Summary{ID: id, Channel: ch.GroupID(), Root: id, Participants: []string{}}
	if n, ok, err := f.threads.ThreadNode(ctx, c, id); err != nil {
		f.internalError(w, req, "thread node", err)
		return
	} else if ok {
		out.Root, out.Depth = n.Root, n.Depth
	}
	sum, err := f.threads.ThreadSummary(ctx, c, id)
	if err != nil {
		f.internalError(w, req, "thread summary", err)
		return
	}
	out.ReplyCount, out.DescendantCount = sum.ReplyCount, sum.DescendantCount
	if sum.LastReplyAt != 0 {
		out.LastReplyAt = &sum.LastReplyAt
	}
	if sum.Participants != nil {
		out.Participants = sum.Participants
	}
	apijson.Write(w, http.StatusOK, out)
}

// readableMessage finds message id of community c, a thread kind in a
// channel that reader may read, and returns that channel.
func (f *Feature) readableMessage(ctx context.Context, c tenant.CommunityID, id, reader string) (channel.Channel, bool, error) {
	var ev *nostr.Event
	for rec, err := range f.h.Store().Query(ctx, c, nostr.Filter{IDs: []string{id}, Limit: 1, LimitSet: true}) {
		if err != nil {
			return channel.Channel{}, false, err
		}
		if ev, err = nostr.ParseEvent(rec.Raw); err != nil {
			return channel.Channel{}, false, err
		}
	}
	if ev == nil || !store.IsThreadKind(ev.Kind) {
		return channel.Channel{}, false, nil
	}
	cid, in, err := channel.OfEvent(ev)
	if err != nil || !in {
		return channel.Channel{}, false, nil
	}
	ch, err := f.channels.Channel(ctx, c, cid)
	if errors.Is(err, channel.ErrNoChannel) {
		return channel.Channel{}, false, nil
	} else if err != nil {
		return channel.Channel{}, false, err
	}
	_, member, err := f.channels.ChannelRole(ctx, c, cid, reader)
	if err != nil {
		return channel.Channel{}, false, err
	}
	return ch, channel.MayRead(ch, member), nil
}

func (f *Feature) internalError(w http.ResponseWriter, req *http.Request, what string, err error) {
	f.h.Logger().ErrorContext(req.Context(), "threads: "+what, "err", err)
	apijson.Error(w, http.StatusInternalServerError, "error", "error: could not read the thread")
}
