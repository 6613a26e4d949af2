package embedded

import (
	"database/sql"
	"encoding/hex"
	"errors"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// memberRole returns pubkey's role among community cseq's members rows
// ("" when it has none), inside the writer's transaction.
func (w *writer) memberRole(cseq int64, pk []byte) (channel.Role, error) {
	var role string
	err := w.conn.QueryRowContext(w.ctx, `SELECT role FROM community_members WHERE community = ? AND pubkey = ?`, cseq, pk).Scan(&role)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", internal("community member role", err)
	}
	return channel.Role(role), nil
}

// announceMembership stores a's announcements of a change of pubkey's
// membership in community cseq (see store.MembershipChange), inside the
// writer's transaction: the single writer serializes it with every other
// change.
func (w *writer) announceMembership(a *store.MembershipAnnouncer, cseq int64, c tenant.CommunityID, pubkey string, added, removed bool) error {
	var last int64
	var owner []byte
	if err := w.conn.QueryRowContext(w.ctx, `SELECT membership_at, owner_pubkey FROM communities WHERE seq = ?`, cseq).Scan(&last, &owner); err != nil {
		return internal("membership announcement", err)
	}
	at := store.NextMembershipAt(a.Now(), last)
	if _, err := w.conn.ExecContext(w.ctx, `UPDATE communities SET membership_at = ? WHERE seq = ?`, at, cseq); err != nil {
		return internal("membership announcement", err)
	}
	var members []channel.Member
	ownerHex := ""
	if len(owner) == 32 {
		ownerHex = hex.EncodeToString(owner)
		members = append(members, channel.Member{PubKey: ownerHex, Role: channel.RoleOwner})
	}
	rows, err := w.conn.QueryContext(w.ctx, `SELECT pubkey, role FROM community_members WHERE community = ?`, cseq)
	if err != nil {
		return internal("community members", err)
	}
	for rows.Next() {
		var pk []byte
		var role string
		if err := rows.Scan(&pk, &role); err != nil {
			rows.Close()
			return internal("community members", err)
		}
		if h := hex.EncodeToString(pk); h != ownerHex {
			members = append(members, channel.Member{PubKey: h, Role: channel.Role(role)})
		}
	}
	if err := rows.Close(); err != nil {
		return internal("community members", err)
	}
	if err := rows.Err(); err != nil {
		return internal("community members", err)
	}
	store.SortMembers(members)
	evs, err := a.Build(store.MembershipChange{Community: c, Pubkey: pubkey, Added: added, Removed: removed, Members: members, At: at})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		p, err := prepare(ev)
		if err != nil {
			return err
		}
		p.community, p.cid = cseq, c
		if err := w.saveCommandEvent(p); err != nil {
			return err
		}
	}
	return nil
}
