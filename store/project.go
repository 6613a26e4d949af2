package store

import (
	"context"
	"slices"

	"github.com/buzzrelay/buzz/tenant"
)

// MaxRelatedChannels bounds a project's related channels, and each side
// of one change (Buzz: 64).
const MaxRelatedChannels = 64

// ProjectChange is one compare-and-swap on a project's state (NIP-PC kind
// 47010): apply Add and Remove to the related channels of project
// (Owner, D) when its revision is still Expected.
type ProjectChange struct {
	// EventID is the change event; a change is applied at most once per
	// community (its receipt is kept with the revision it produced).
	EventID string
	Owner   string // the project's owner (64 lowercase hex)
	D       string // the project's d
	// Identity is the id of the project's current kind 30621 event, read
	// by the caller; Home is its home channel ("" when none) and Related
	// the related channels it names. A project seen for the first time is
	// materialized at revision 1 from them; an identity other than the
	// one last materialized is a new revision (its related channels are
	// united with the current ones, the home channel left out), so a
	// change based on the previous one is stale.
	Identity string
	Home     string
	Related  []string
	// Expected is the revision the change was made against.
	Expected int64
	// Add and Remove are distinct, disjoint channel ids.
	Add, Remove []string
}

// ProjectChangeStatus is how a ProjectChange ended.
type ProjectChangeStatus int

// The outcomes of ApplyProjectChange.
const (
	// ProjectChangeApplied: the change committed; Revision is the new
	// revision and Related the effective related channels (sorted).
	ProjectChangeApplied ProjectChangeStatus = iota
	// ProjectChangeDuplicate: this event was applied before; Revision is
	// the revision it produced. Nothing changed.
	ProjectChangeDuplicate
	// ProjectChangeConflict: the project's revision is not Expected;
	// Revision is the current one. Nothing changed.
	ProjectChangeConflict
	// ProjectChangeInvalid: the change does not fit the current state
	// (Reason says why, in Buzz's words). Nothing changed.
	ProjectChangeInvalid
)

// ProjectChangeResult is the outcome of ApplyProjectChange.
type ProjectChangeResult struct {
	Status   ProjectChangeStatus
	Revision int64
	Related  []string
	Reason   string
}

// Buzz's reasons for ProjectChangeInvalid.
const (
	ReasonProjectAddExisting  = "cannot add the home channel or an already-related channel"
	ReasonProjectRemoveAbsent = "cannot remove a channel that is not related"
	ReasonProjectTooMany      = "effective Project state exceeds 64 related channels"
)

// ProjectStore keeps the revisioned state of a community's projects
// (NIP-PC): a monotonic revision per project and its related channels.
// Both backends implement it.
type ProjectStore interface {
	// ApplyProjectChange applies ch in community c atomically: the
	// receipt check, the revision comparison, the new related channels,
	// the revision's advance and the receipt are one transaction,
	// serialized per project across every process sharing the backend —
	// of two changes made against the same revision exactly one is
	// applied. Only store failures are errors.
	ApplyProjectChange(ctx context.Context, c tenant.CommunityID, ch ProjectChange) (ProjectChangeResult, error)
}

// RepoReservation is the outcome of ReserveRepoName.
type RepoReservation int

// The outcomes of ReserveRepoName.
const (
	// RepoReserved: the name was free and is now the owner's.
	RepoReserved RepoReservation = iota
	// RepoAlreadyOwned: the owner held it already (a re-announcement);
	// the quota is not counted again.
	RepoAlreadyOwned
	// RepoTakenByOther: another owner holds the name. Nothing changed.
	RepoTakenByOther
	// RepoQuotaExceeded: the owner holds limit names already. Nothing
	// changed.
	RepoQuotaExceeded
)

// RepoNameStore reserves git repository names (NIP-34 kind 30617 d
// values): unique per community, at most a quota per owner per community.
// Both backends implement it.
type RepoNameStore interface {
	// ReserveRepoName reserves name for owner in community c unless
	// another owner holds it or owner already holds limit names — one
	// atomic decision across every process sharing the backend.
	ReserveRepoName(ctx context.Context, c tenant.CommunityID, name, owner string, limit int) (RepoReservation, error)
	// ReleaseRepoName frees name if owner holds it (the undo of a
	// reservation whose announcement could not be stored).
	ReleaseRepoName(ctx context.Context, c tenant.CommunityID, name, owner string) error
}

// ProjectHead is the stored state of one project: what both backends keep
// and DecideProjectChange reads and returns.
type ProjectHead struct {
	Exists   bool
	Revision int64
	Identity string
	Related  []string // sorted
}

// DecideProjectChange is the rule of ApplyProjectChange, the same for every
// backend, which calls it inside its transaction with the project's head
// (after the receipt check): it returns the head to keep, whether it
// differs from h (then the backend writes it), and the result. The caller
// keeps a receipt when the result is ProjectChangeApplied.
func DecideProjectChange(h ProjectHead, ch ProjectChange) (ProjectHead, bool, ProjectChangeResult) {
	changed := false
	switch {
	case !h.Exists:
		h = ProjectHead{Exists: true, Revision: 1, Identity: ch.Identity, Related: relatedSet(nil, ch.Related, ch.Home)}
		if len(h.Related) > MaxRelatedChannels {
			h.Related = h.Related[:MaxRelatedChannels]
		}
		changed = true
	case h.Identity != ch.Identity:
		related := relatedSet(h.Related, ch.Related, ch.Home)
		if len(related) > MaxRelatedChannels {
			return h, false, ProjectChangeResult{Status: ProjectChangeInvalid, Revision: h.Revision, Reason: ReasonProjectTooMany}
		}
		h = ProjectHead{Exists: true, Revision: h.Revision + 1, Identity: ch.Identity, Related: related}
		changed = true
	}
	if ch.Expected != h.Revision {
		return h, changed, ProjectChangeResult{Status: ProjectChangeConflict, Revision: h.Revision}
	}
	set := make(map[string]bool, len(h.Related)+len(ch.Add))
	for _, id := range h.Related {
		set[id] = true
	}
	for _, id := range ch.Add {
		if id == ch.Home || set[id] {
			return h, changed, ProjectChangeResult{Status: ProjectChangeInvalid, Revision: h.Revision, Reason: ReasonProjectAddExisting}
		}
		set[id] = true
	}
	for _, id := range ch.Remove {
		if !set[id] {
			return h, changed, ProjectChangeResult{Status: ProjectChangeInvalid, Revision: h.Revision, Reason: ReasonProjectRemoveAbsent}
		}
		delete(set, id)
	}
	if len(set) > MaxRelatedChannels {
		return h, changed, ProjectChangeResult{Status: ProjectChangeInvalid, Revision: h.Revision, Reason: ReasonProjectTooMany}
	}
	next := ProjectHead{Exists: true, Revision: h.Revision + 1, Identity: h.Identity, Related: sortedKeys(set)}
	return next, true, ProjectChangeResult{Status: ProjectChangeApplied, Revision: next.Revision, Related: next.Related}
}

// relatedSet is a ∪ b without home, sorted and distinct.
func relatedSet(a, b []string, home string) []string {
	set := make(map[string]bool, len(a)+len(b))
	for _, s := range [][]string{a, b} {
		for _, id := range s {
			if id != home {
				set[id] = true
			}
		}
	}
	return sortedKeys(set)
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
