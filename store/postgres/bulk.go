package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

// BulkLoad copies events into community c with COPY, in one transaction,
// for seeding benchmarks and imports. It bypasses Save's semantics: the
// caller guarantees the events are well-formed, not already stored, not
// deletion requests, and hold at most one version per replaceable or
// addressable coordinate. It connects as the URL's user, which must not be
// subject to row-level security (COPY refuses RLS tables): use the schema
// owner or a superuser, never the relay's role. The event tables are
// analysed afterwards, so queries plan on current statistics at once.
func BulkLoad(ctx context.Context, databaseURL string, c tenant.CommunityID, events []*nostr.Event) (int64, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return 0, fmt.Errorf("postgres: bulk load: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows := make([][]any, 0, len(events))
	var tagRows [][]any
	for _, ev := range events {
		if ev.Kind == nostr.KindDeletion {
			return 0, fmt.Errorf("postgres: bulk load: deletion requests must go through Save")
		}
		a, err := encodeEvent(c, ev)
		if err != nil {
			return 0, fmt.Errorf("postgres: bulk load: %w", err)
		}
		rows = append(rows, []any{a.community, a.createdAt, a.id, a.pubkey, a.kind, json.RawMessage(a.tags), a.content, a.sig, a.raw, a.dTag, a.expiresAt, a.channelArg()})
		for i := range a.tagNames {
			tagRows = append(tagRows, []any{a.community, a.tagNames[i], a.tagValues[i], a.createdAt, a.id, a.kind, a.expiresAt, a.channelArg()})
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres: bulk load: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"community_id", "created_at", "id", "pubkey", "kind", "tags", "content", "sig", "raw", "d_tag", "expires_at", "channel_id"},
		pgx.CopyFromRows(rows))
	if err != nil {
		return 0, fmt.Errorf("postgres: bulk load: copy events: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"event_tags"},
		[]string{"community_id", "name", "value", "created_at", "event_id", "kind", "expires_at", "channel_id"},
		pgx.CopyFromRows(tagRows)); err != nil {
		return 0, fmt.Errorf("postgres: bulk load: copy tags: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("postgres: bulk load: commit: %w", err)
	}
	// Bulk growth leaves the planner blind until statistics are taken
	// (see analyze.go): take them now, on the owner's connection.
	if err := analyzeAll(ctx, conn); err != nil {
		return n, fmt.Errorf("postgres: bulk load: analyze: %w", err)
	}
	return n, nil
}
