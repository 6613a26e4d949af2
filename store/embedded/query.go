package embedded

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// Query implements store.EventStore. The returned sequence holds the
// engine's read state until the consumer stops or the events end.
func (s *Store) Query(ctx context.Context, c tenant.CommunityID, f nostr.Filter) iter.Seq2[store.Record, error] {
	return s.QueryScoped(ctx, c, f, channel.AllChannels())
}

// QueryScoped implements store.ChannelStore: Query restricted to the
// community-wide events and the channels of scope. A search runs on the
// text index (search); any other filter on the events engine.
func (s *Store) QueryScoped(ctx context.Context, c tenant.CommunityID, f nostr.Filter, scope channel.Scope) iter.Seq2[store.Record, error] {
	return func(yield func(store.Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(store.Record{}, err)
			return
		}
		if f.LimitSet && f.Limit <= 0 {
			return
		}
		s.reads.Add(1)
		_, err := s.communitySeq(ctx, c)
		if errors.Is(err, errNoSuchCommunity) {
			return // an unknown community holds nothing
		}
		if err != nil {
			yield(store.Record{}, err)
			return
		}
		if err := s.eventsOff(); err != nil {
			yield(store.Record{}, err)
			return
		}
		if f.Search != "" {
			s.search(ctx, c, f, scope, yield)
			return
		}
		for r, err := range s.ev.QueryScoped(ctx, c, f, scope) {
			if !yield(r, err) {
				return
			}
		}
	}
}

// Count implements store.EventStore: distinct live events matching any of
// filters; limits are ignored.
func (s *Store) Count(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter) (int64, error) {
	return s.CountScoped(ctx, c, filters, channel.AllChannels())
}

// CountScoped implements store.ChannelStore: Count restricted to the
// community-wide events and the channels of scope.
func (s *Store) CountScoped(ctx context.Context, c tenant.CommunityID, filters []nostr.Filter, scope channel.Scope) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.reads.Add(1)
	_, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := s.eventsOff(); err != nil {
		return 0, err
	}
	return s.ev.CountScoped(ctx, c, filters, scope)
}

// CountEach answers CountScoped for each of sets, in order.
func (s *Store) CountEach(ctx context.Context, c tenant.CommunityID, sets [][]nostr.Filter, scope channel.Scope) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_, err := s.communitySeq(ctx, c)
	if errors.Is(err, errNoSuchCommunity) {
		return make([]int64, len(sets)), nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.eventsOff(); err != nil {
		return nil, err
	}
	return s.ev.CountEach(ctx, c, sets, scope)
}

// DeleteExpired implements store.EventStore: it removes, in every community,
// the events whose NIP-40 expiration is at or before now, and takes the
// expired replies out of their threads.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	if err := s.eventsOff(); err != nil {
		return 0, err
	}
	if err := s.pruneAuthority(ctx, now); err != nil {
		return 0, err
	}
	n, err := s.ev.DeleteExpired(ctx, now)
	if err != nil {
		return n, err
	}
	return n, s.deleteExpiredReplies(ctx, now)
}

// pruneAuthority forgets the authority marks (store.Authority) whose until
// is before now.
func (s *Store) pruneAuthority(ctx context.Context, now time.Time) error {
	return s.submit(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(w.ctx, `DELETE FROM applied_authority WHERE until < ?`, now.Unix()); err != nil {
			return internal("prune authority marks", err)
		}
		return nil
	})
}
