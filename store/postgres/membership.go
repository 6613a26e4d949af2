package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// lockMembership takes community c's row lock for a membership change, so
// that changes of c are serialized across pods (a concurrent change waits
// here until this transaction ends, then sees its effect). It returns the
// community's last announcement time.
func lockMembership(ctx context.Context, tx pgx.Tx, c tenant.CommunityID) (int64, error) {
	var last int64
	err := tx.QueryRow(ctx, `SELECT membership_at FROM communities WHERE id = $1 FOR UPDATE`, c.UUID()).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, store.ErrNoCommunity
	}
	return last, err
}

// memberRole returns pk's role among c's member rows ("" when it has none).
func memberRole(ctx context.Context, tx pgx.Tx, c tenant.CommunityID, pk []byte) (channel.Role, error) {
	var role string
	err := tx.QueryRow(ctx, `SELECT role FROM community_members WHERE community_id = $1 AND pubkey = $2`, c.UUID(), pk).Scan(&role)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	return channel.Role(role), nil
}

// announceMembership stores a's announcements of a change of pubkey's
// membership in c (see store.MembershipChange) in tx, the transaction of
// the change, which holds c's row lock (lockMembership returned last).
func announceMembership(ctx context.Context, tx pgx.Tx, a *store.MembershipAnnouncer, c tenant.CommunityID, pubkey string, added, removed bool, last int64) error {
	at := store.NextMembershipAt(a.Now(), last)
	var owner []byte
	if err := tx.QueryRow(ctx, `UPDATE communities SET membership_at = $2 WHERE id = $1 RETURNING owner_pubkey`, c.UUID(), at).Scan(&owner); err != nil {
		return fmt.Errorf("membership announcement: %w", err)
	}
	var members []channel.Member
	ownerHex := ""
	if len(owner) == 32 {
		ownerHex = hex.EncodeToString(owner)
		members = append(members, channel.Member{PubKey: ownerHex, Role: channel.RoleOwner})
	}
	rows, err := tx.Query(ctx, `SELECT pubkey, role FROM community_members WHERE community_id = $1`, c.UUID())
	if err != nil {
		return fmt.Errorf("community members: %w", err)
	}
	for rows.Next() {
		var pk []byte
		var role string
		if err := rows.Scan(&pk, &role); err != nil {
			rows.Close()
			return fmt.Errorf("community members: %w", err)
		}
		if h := hex.EncodeToString(pk); h != ownerHex {
			members = append(members, channel.Member{PubKey: h, Role: channel.Role(role)})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("community members: %w", err)
	}
	store.SortMembers(members)
	evs, err := a.Build(store.MembershipChange{Community: c, Pubkey: pubkey, Added: added, Removed: removed, Members: members, At: at})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		args, err := encodeEvent(c, ev)
		if err != nil {
			return err
		}
		var code int16
		if err := tx.QueryRow(ctx, saveSQL, args.values()...).Scan(&code); err != nil {
			return fmt.Errorf("membership announcement: %w", err)
		}
		if err := saveResult(code); err != nil {
			return fmt.Errorf("membership announcement kind %d refused: %w", ev.Kind, err)
		}
	}
	return nil
}
