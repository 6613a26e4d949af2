package ingest

import (
	"context"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
)

// Refusals of thread replies, as Buzz words them.
const (
	MsgThreadParentNotFound = "invalid: reply parent not found"
	MsgThreadParentNoChan   = "invalid: parent event has no channel association"
	MsgThreadRootMismatch   = "invalid: root tag does not match thread ancestry"
	MsgThreadTooDeep        = "invalid: thread depth limit exceeded"
)

// admitThread applies Buzz's rules to a thread reply (store.IsThreadReply:
// a message kind in a channel with a NIP-10 reply marker), step 9”: its
// parent is an event of the same channel — looked up in that channel and
// the community-wide events only, so a message of another channel (one the
// author may not read) is not found either, and the answer tells nothing of
// it; its root tag, when it has one, names the parent's thread root (the
// parent itself when the parent is not a reply); and it sits at most
// store.MaxThreadDepth deep. Without a ThreadStore replies are admitted
// unchecked. It returns "" or the refusal.
func (p *Pipeline) admitThread(ctx context.Context, s Submission, d channel.Admission) string {
	ev, c := s.Event, s.Tenant.Community()
	ts := p.cfg.Threads
	if ts == nil || !d.InChannel {
		return ""
	}
	ref, ok := store.IsThreadReply(ev)
	if !ok {
		return ""
	}
	parent, found, err := p.lookup(ctx, c, ref.Parent, d)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: reply parent lookup", "community", c.String(), "err", err)
		return MsgInternal
	}
	if !found {
		return MsgThreadParentNotFound
	}
	if pc, has, _ := channel.OfEvent(parent); !has {
		return MsgThreadParentNoChan
	} else if pc != d.Channel {
		return MsgThreadParentNotFound
	}
	root, depth := ref.Parent, 1
	n, isReply, err := ts.ThreadNode(ctx, c, ref.Parent)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: reply parent thread", "community", c.String(), "err", err)
		return MsgInternal
	}
	if isReply {
		root, depth = n.Root, n.Depth+1
	}
	if ref.Root != root {
		return MsgThreadRootMismatch
	}
	if depth > store.MaxThreadDepth {
		return MsgThreadTooDeep
	}
	return ""
}
