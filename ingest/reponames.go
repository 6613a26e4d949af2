package ingest

import (
	"context"
	"time"

	"github.com/buzzrelay/buzz/store"
)

// DefaultMaxReposPerPubKey is Config.MaxReposPerPubKey's default: how
// many repository names one owner may hold in a community (Buzz: 100).
const DefaultMaxReposPerPubKey = 100

// Refusals of a repository announcement's name (kind 30617), Buzz's texts.
const (
	MsgRepoNameTaken = "invalid: repository name is already reserved"
	MsgRepoQuota     = "invalid: repository quota exceeded"
)

// reserveRepoName reserves a repository announcement's name (its d, checked
// by ValidateRepository) for its author in the submission's community:
// a name is one owner's per community, and an owner holds at most
// Config.MaxReposPerPubKey names there; announcing a name one holds
// already (a new version) costs nothing. It returns the name when this
// call reserved it (to release if the event is then not stored), or the
// refusal.
func (p *Pipeline) reserveRepoName(ctx context.Context, s Submission) (reserved, refusal string) {
	rs := p.cfg.RepoNames
	if rs == nil {
		return "", ""
	}
	ev, c := s.Event, s.Tenant.Community()
	name := ev.DTag()
	r, err := rs.ReserveRepoName(ctx, c, name, ev.PubKey, p.cfg.MaxReposPerPubKey)
	if err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: reserve repository name", "community", c.String(), "err", err)
		return "", MsgInternal
	}
	switch r {
	case store.RepoReserved:
		return name, ""
	case store.RepoTakenByOther:
		return "", MsgRepoNameTaken
	case store.RepoQuotaExceeded:
		return "", MsgRepoQuota
	}
	return "", ""
}

// releaseRepoName frees a name reserved for an announcement that was not
// stored, even when the submission's context has ended meanwhile.
func (p *Pipeline) releaseRepoName(ctx context.Context, s Submission, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := p.cfg.RepoNames.ReleaseRepoName(ctx, s.Tenant.Community(), name, s.Event.PubKey); err != nil {
		p.cfg.Logger.ErrorContext(ctx, "ingest: release repository name", "community", s.Tenant.Community().String(), "err", err)
	}
}
