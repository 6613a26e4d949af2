// Package channel is the one home of Buzz's channel domain (NIP-29 groups,
// as Buzz has them): channel ids and the h tag, commands and their
// validation, roles and their rules, community access policies, write
// admission and read access, and the refusal messages clients get for
// any of them. Everything that decides who may read or write a channel
// lives here, so a frontend other than the relay's own WebSocket handler
// gets the same answers (see Access and Reader).
//
// It depends only on nostr and tenant (and an internal cache): it must not
// import store, ingest, pubsub or the root package buzz. Storage backends
// implement the small Store interface it consumes; package store keeps
// only what persistence needs and imports this package for its types.
//
// A channel is a UUID inside one community: channels are keyed (community,
// id), so the same UUID may name two unrelated channels in two communities,
// and nothing a client sends can name a channel of another community — a
// channel id is always looked up inside the community the connection is
// bound to. An event belongs to the channel named by its "h" tag (see
// OfEvent); an event without "h" is community-wide (channel NULL).
// Backends record the channel of every stored event and scope reads by it
// (store.ChannelStore's QueryScoped and CountScoped, given a Scope).
//
// Roles and what they may do (enforced by Authorize and MayPost/MayRead,
// which both backends and the relay share):
//
//   - owner: everything — post, read, put and remove anyone (other owners
//     included), change roles, edit metadata, delete events, delete the
//     channel. A channel always keeps at least one owner: the last owner can
//     neither leave, be removed, nor be demoted.
//   - admin: post, read, put new users as member, guest, bot or a role of
//     the client's naming (see ValidRole), remove
//     members, guests and bots (never admins or owners), edit metadata,
//     delete events in the channel. An admin cannot change an existing
//     member's role nor grant admin or owner.
//   - member: post and read.
//   - bot: post and read (a member kind for automation; no moderation).
//   - guest: read only — a guest can never post in the channel, open or not.
//   - any other role name (NIP-29 clients name their own, e.g.
//     "moderator"): what member may do; listed in 39003.
//
// Posting into a channel (MayPost): the channel exists and is not deleted,
// and the author is an active member whose role is not guest, or the
// channel is open and the author is not one of its guests. Reading (MayRead):
// an open channel is readable by every reader the community admits; a
// private one only by its active members (guests included).
//
// Commands (Command; a backend executes them with
// store.ChannelStore.ApplyChannelCommand), one event kind each (the kinds
// are in package nostr):
//
//   - 9007 create: h is the new channel's group id chosen by the client (a
//     UUID for Buzz's clients, any NIP-29 id otherwise); tags name
//     (optional), visibility open|private (default open), channel_type
//     stream|forum|dm|workflow (default stream), about, picture, and the
//     NIP-29 flags (see Channel). The author becomes its owner. An id
//     already used in this community — even by a deleted channel — is
//     ErrChannelExists.
//   - 9021 join: a channel that is not closed makes the author a member; a
//     member's repeat is ErrAlreadyMember and changes nothing; a closed
//     channel is joined by being put (9000), or by a join whose "code" tag
//     is an invite code of the channel (Invited, checked by the caller) —
//     any other join is ErrNotPermitted.
//   - 9009 create invite: "code" tag = the invite code (owner, admin), in
//     a private channel only (ErrPublicInvite otherwise: its events, the
//     invite among them, are readable by anyone). The command event is the
//     invite: a code is valid while its 9009 is
//     stored in the channel, for any number of joins (multi-use); deleting
//     the 9009 (9005) revokes it.
//   - 9022 leave: the author stops being a member (ErrNotMember if not one).
//   - 9000 put-user: p tag = the user, optional third element = role
//     (default member); see the roles above.
//   - 9001 remove-user: p tag = the user (ErrNotMember if not one).
//   - 9002 edit metadata: name, about, picture, visibility and flag tags
//     (private/public, closed/open, restricted/unrestricted,
//     hidden/visible); absent tags are unchanged. An edit older than the
//     channel's newest 9007/9002 is ErrStaleEdit.
//   - 9005 delete event: e tag = an event of this channel, which is removed
//     and cannot be stored again (ErrNoEvent if the channel holds no such
//     event).
//   - 9008 delete channel: the channel disappears: it resolves as unknown,
//     is readable by nobody, and its id cannot be reused.
//
// Every command event is stored in its channel, atomically with its effect.
package channel
