package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// auditBrokenError is returned when verification found a broken chain
// (exit status 1).
type auditBrokenError struct{ communities int }

func (e auditBrokenError) Error() string {
	return fmt.Sprintf("audit: %d community chain(s) broken", e.communities)
}

// runAudit is "buzzd audit verify [-host H | -all] [store flags]": it
// recomputes the audit chain of one community (by host) or of every
// community, prints one line per community — the first broken seq of a
// broken chain — and fails when any chain is broken.
func runAudit(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		return usageError{errors.New("audit: want \"buzzd audit verify [-host H | -all]\"")}
	}
	host, all, rest, err := auditFlags(args[1:])
	if err != nil {
		return err
	}
	if (host == "") == !all {
		return usageError{errors.New("audit verify: give exactly one of -host H or -all")}
	}
	cfg, err := parseConfig("audit verify", rest, lookupEnv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := newLogger(cfg, stderr)
	st, err := openBackend(ctx, cfg, logger, false)
	if err != nil {
		return err
	}
	defer st.Close()
	log, ok := st.(store.AuditLog)
	if !ok {
		return errors.New("audit verify: the store keeps no audit chains")
	}
	// Link entries queued by changes that committed (PostgreSQL's outbox),
	// so the whole chain is verified.
	if err := log.SyncAudit(ctx); err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	var ids []tenant.CommunityID
	if all {
		if ids, err = log.AuditCommunities(ctx); err != nil {
			return fmt.Errorf("audit verify: %w", err)
		}
	} else {
		id, err := communityOfHost(ctx, st, host)
		if err != nil {
			return err
		}
		ids = []tenant.CommunityID{id}
	}
	broken := 0
	for _, id := range ids {
		rep, err := store.VerifyAudit(ctx, log, id)
		if err != nil {
			return fmt.Errorf("audit verify: community %s: %w", id, err)
		}
		if rep.BrokenSeq != 0 {
			broken++
			fmt.Fprintf(stdout, "community %s: BROKEN at seq %d (%s); %d entries verify before it\n", id, rep.BrokenSeq, rep.Reason, rep.Entries)
			continue
		}
		fmt.Fprintf(stdout, "community %s: ok, %d entries\n", id, rep.Entries)
	}
	if broken > 0 {
		return auditBrokenError{broken}
	}
	return nil
}

// auditFlags takes -host and -all out of args, leaving the store flags.
func auditFlags(args []string) (host string, all bool, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		switch name {
		case "host":
			if !hasVal {
				if i+1 >= len(args) {
					return "", false, nil, usageError{errors.New("audit verify: -host needs a value")}
				}
				i++
				val = args[i]
			}
			host = val
		case "all":
			if hasVal && val != "true" {
				return "", false, nil, usageError{fmt.Errorf("audit verify: -all takes no value")}
			}
			all = true
		default:
			rest = append(rest, a)
		}
	}
	return host, all, rest, nil
}

// communityOfHost finds the community of host, archived or not.
func communityOfHost(ctx context.Context, st store.Backend, host string) (tenant.CommunityID, error) {
	h, err := tenant.NormalizeHost(host)
	if err != nil {
		return tenant.CommunityID{}, usageError{fmt.Errorf("audit verify: -host %q: %w", host, err)}
	}
	if reg, ok := st.(interface {
		CommunityByHost(context.Context, string) (store.Community, error)
	}); ok {
		c, err := reg.CommunityByHost(ctx, h)
		if errors.Is(err, store.ErrNoCommunity) {
			return tenant.CommunityID{}, fmt.Errorf("audit verify: no community has host %q", h)
		}
		return c.ID, err
	}
	id, err := st.LookupHost(ctx, h)
	if err != nil {
		return tenant.CommunityID{}, fmt.Errorf("audit verify: host %q: %w", h, err)
	}
	return id, nil
}
