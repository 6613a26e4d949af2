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

// auditUsage is buzzd audit's help.
const auditUsage = `usage: buzzd audit verify (-host HOST | -all) [flags]

Recomputes the audit chains of one community (by any of its hosts,
archived ones included) or of every community, and prints one line per
community: "ok" with its entry count, or the first broken seq and why.
Exit status 1 when any chain is broken. The store is the one buzzd is
configured with (DATABASE_URL, else BUZZ_DATA_DIR; every buzzd setting and
flag applies) and may be read while buzzd runs.
`

// runAudit is "buzzd audit verify [-host H | -all] [store flags]": it
// recomputes the audit chain of one community (by host) or of every
// community, prints one line per community — the first broken seq of a
// broken chain — and fails when any chain is broken.
func runAudit(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "help" || a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprint(stdout, auditUsage)
			return nil
		}
	}
	if len(args) == 0 || args[0] != "verify" {
		return usageError{err: errors.New("audit: want \"buzzd audit verify [-host H | -all]\""), help: "buzzd audit help"}
	}
	host, all, rest, err := auditFlags(args[1:])
	if err != nil {
		return err
	}
	if (host == "") == !all {
		return usageError{err: errors.New("audit verify: give exactly one of -host H or -all"), help: "buzzd audit help"}
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
					return "", false, nil, usageError{err: errors.New("audit verify: -host needs a value"), help: "buzzd audit help"}
				}
				i++
				val = args[i]
			}
			host = val
		case "all":
			if hasVal && val != "true" {
				return "", false, nil, usageError{err: fmt.Errorf("audit verify: -all takes no value"), help: "buzzd audit help"}
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
		return tenant.CommunityID{}, usageError{err: fmt.Errorf("audit verify: -host %q: %w", host, err), help: "buzzd audit help"}
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
