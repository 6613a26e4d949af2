package main

// buzzd admin: the operator API's changes, and a few listings, for whoever
// can run the binary next to the store — no NIP-98 tooling needed.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/buzzrelay/buzz/cluster"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/operator"
	"github.com/buzzrelay/buzz/pubsub/control"
	"github.com/buzzrelay/buzz/pubsub/redis"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

const adminUsage = `usage: buzzd admin <command> [flags]

  keygen                                   print a new key pair (hex and bech32)
  community add HOST [-owner PUBKEY] [-create-only]
  community list [-owner PUBKEY]           every community, or one owner's
  community archive HOST                   unmap HOST (the relay's main host, recorded by buzzd, is protected)
  community unarchive HOST
  community transfer HOST NEW_OWNER
  community profile HOST [-name N] [-description D] [-icon URL] [-contact URI]
                                           show the profile, or change the fields given
  community policy HOST [open|members]     show or set who may read and write
  community kinds HOST [default|off|buzz|LIST]
                                           show or set the kinds clients may publish
  channel list HOST
  member add HOST PUBKEY [-role ROLE]      ROLE: admin, moderator, member (default)
  member role HOST PUBKEY ROLE
  member remove HOST PUBKEY
  token mint HOST PUBKEY -scopes S1,S2 [-name N] [-expires 30d|12h|never]
                                           mint an API token acting as PUBKEY (shown once)
  token list HOST                          the community's tokens (never the tokens themselves)
  token revoke HOST ID                     revoke a token: refused at once on every pod

A PUBKEY is 64 hex characters or an npub. Flags: -json prints JSON for
scripts; -actor PUBKEY names who acts in the audit chain (default: none,
a local administrator). The store is the one buzzd is configured with
(DATABASE_URL, else BUZZ_DATA_DIR; every buzzd setting and flag applies).
Changes go through the same store calls, quotas and audit entries as the
operator API; with REDIS_URL set, running pods are told at once (host
changes, disconnects of an archived community or removed member).
`

// adminHelp returns the admin help for topic, the command words asked
// about ("community", "community add"): the usage lines of the commands
// they start and the closing notes; all of it for no topic or one that
// names no command.
func adminHelp(topic []string) string {
	if len(topic) == 0 {
		return adminUsage
	}
	prefix := strings.Join(topic, " ")
	lines := strings.Split(adminUsage, "\n")
	var out []string
	matched := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if t == prefix || strings.HasPrefix(t, prefix+" ") {
			out = append(out, l)
			matched = true
			// A continuation line (deeper indent, no command) belongs to it.
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "                    ") {
				i++
				out = append(out, lines[i])
			}
		}
	}
	if !matched {
		return adminUsage
	}
	return "usage: buzzd admin <command> [flags]\n\n" + strings.Join(out, "\n") + "\n\nbuzzd admin help lists every command, its flags and the store it uses.\n"
}

// adminStore is what the admin CLI needs of a backend; store/embedded and
// store/postgres implement it.
type adminStore interface {
	store.Backend
	operator.Store
	operator.SettingsStore
	PutCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string, role channel.Role) error
	RemoveCommunityMember(ctx context.Context, c tenant.CommunityID, pubkey string) error
	CommunityRole(ctx context.Context, c tenant.CommunityID, pubkey string) (channel.Role, bool, error)
	Communities(ctx context.Context) ([]store.Community, error)
	Channels(ctx context.Context, c tenant.CommunityID) ([]channel.Channel, error)
}

// adminFlags are the flags of the admin commands (the settings' flags are
// passed on to parseConfig).
type adminFlags struct {
	json, createOnly bool
	actor, owner     string
	role             string
	scopes, expires  string            // token mint
	profile          map[string]string // -name, -description, -icon, -contact given
}

// runAdmin runs "buzzd admin …" (args without "admin").
func runAdmin(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	var f adminFlags
	words, rest, err := splitAdminArgs(args, &f)
	if err != nil {
		return err
	}
	if len(words) == 0 || words[0] == "help" {
		var topic []string
		if len(words) > 0 {
			topic = words[1:]
		}
		fmt.Fprint(stdout, adminHelp(topic))
		return nil
	}
	if words[0] == "keygen" {
		if len(words) != 1 {
			return usageError{err: errors.New("admin keygen takes no arguments"), help: "buzzd admin help"}
		}
		return adminKeygen(stdout, f.json)
	}
	if len(words) < 2 {
		return usageError{err: fmt.Errorf("admin %s: want a subcommand", words[0]), help: "buzzd admin help"}
	}
	cfg, err := parseConfig("admin", rest, lookupEnv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.actor != "" {
		if f.actor, err = nostr.ParsePubKey(f.actor); err != nil {
			return usageError{err: errors.New("-actor: want 64 hex characters or an npub"), help: "buzzd admin help"}
		}
	}
	// A command's output is its answer: the log says only what went wrong.
	cfg.LogLevel = max(cfg.LogLevel, slog.LevelWarn)
	a := &adminCmd{cfg: cfg, flags: f, out: stdout, log: newLogger(cfg, stderr)}
	backend, err := openBackend(ctx, cfg, a.log, false)
	if err != nil {
		return err
	}
	defer backend.Close()
	st, ok := backend.(adminStore)
	if !ok {
		return errors.New("admin: the store does not keep a community registry")
	}
	a.st = st
	return a.dispatch(audit.WithActor(ctx, f.actor), words)
}

// splitAdminArgs separates the command words, the admin flags (into f) and
// the settings' flags (returned in rest, for parseConfig). Flags may come
// anywhere, with "-name value" or "-name=value".
func splitAdminArgs(args []string, f *adminFlags) (words, rest []string, err error) {
	settingIsBool := map[string]bool{}
	for _, s := range settings() {
		settingIsBool[s.flag] = s.isBool
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			words = append(words, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", usageError{err: fmt.Errorf("flag -%s needs a value", name), help: "buzzd admin help"}
			}
			i++
			return args[i], nil
		}
		switch name {
		case "json", "create-only":
			b := true
			if hasVal {
				if b, err = parseBool(val); err != nil {
					return nil, nil, usageError{err: fmt.Errorf("-%s: %w", name, err), help: "buzzd admin help"}
				}
			}
			if name == "json" {
				f.json = b
			} else {
				f.createOnly = b
			}
		case "actor", "owner", "role", "name", "description", "icon", "contact", "scopes", "expires":
			v, err := value()
			if err != nil {
				return nil, nil, err
			}
			switch name {
			case "actor":
				f.actor = v
			case "owner":
				f.owner = v
			case "role":
				f.role = v
			case "scopes":
				f.scopes = v
			case "expires":
				f.expires = v
			default:
				if f.profile == nil {
					f.profile = map[string]string{}
				}
				f.profile[name] = v
			}
		case "h", "help":
			// Help for the command words so far: "community add -h".
			return append([]string{"help"}, words...), nil, nil
		default:
			isBool, known := settingIsBool[name]
			if !known {
				return nil, nil, usageError{err: fmt.Errorf("admin: unknown flag -%s", name), help: "buzzd admin help"}
			}
			rest = append(rest, a)
			if !isBool && !hasVal {
				if i+1 >= len(args) {
					return nil, nil, usageError{err: fmt.Errorf("flag -%s needs a value", name), help: "buzzd admin help"}
				}
				i++
				rest = append(rest, args[i])
			}
		}
	}
	return words, rest, nil
}

// keyPair is keygen's output.
type keyPair struct {
	SecretKey string `json:"secret_key"`
	Nsec      string `json:"nsec"`
	PubKey    string `json:"pubkey"`
	Npub      string `json:"npub"`
}

func adminKeygen(w io.Writer, asJSON bool) error {
	sk, err := nostr.GenerateSecretKey()
	if err != nil {
		return err
	}
	kp := keyPair{SecretKey: sk.Hex(), PubKey: sk.PublicKey()}
	if kp.Nsec, err = nostr.EncodeNsec(sk); err != nil {
		return err
	}
	if kp.Npub, err = nostr.EncodeNpub(kp.PubKey); err != nil {
		return err
	}
	if asJSON {
		return writeJSONLine(w, kp)
	}
	_, err = fmt.Fprintf(w, "secret key  %s\nnsec        %s\npublic key  %s\nnpub        %s\nKeep the secret key private; give the public key (either form) to buzzd.\n",
		kp.SecretKey, kp.Nsec, kp.PubKey, kp.Npub)
	return err
}

// adminCmd runs one admin command on a store.
type adminCmd struct {
	cfg   Config
	flags adminFlags
	st    adminStore
	out   io.Writer
	log   *slog.Logger
}

// communityJSON is a community in -json output.
type communityJSON struct {
	CommunityID string  `json:"community_id"`
	Host        string  `json:"host"`
	OwnerPubKey *string `json:"owner_pubkey"`
	CreatedAt   string  `json:"created_at"`
	ArchivedAt  *string `json:"archived_at"`
	Status      string  `json:"status,omitempty"`
	// MainHost: the community of the relay's main host (community list).
	MainHost bool `json:"main_host,omitempty"`
}

func toJSON(c store.Community, status string) communityJSON {
	j := communityJSON{CommunityID: c.ID.String(), Host: c.Host, CreatedAt: c.CreatedAt.UTC().Format(time.RFC3339), Status: status}
	if c.OwnerPubKey != "" {
		j.OwnerPubKey = &c.OwnerPubKey
	}
	if c.Archived() {
		s := c.ArchivedAt.UTC().Format(time.RFC3339)
		j.ArchivedAt = &s
	}
	return j
}

func (a *adminCmd) dispatch(ctx context.Context, w []string) error {
	want := func(n int, form string) error {
		if len(w) != n {
			return usageError{err: fmt.Errorf("admin: want \"buzzd admin %s\"", form), help: "buzzd admin help"}
		}
		return nil
	}
	switch w[0] + " " + w[1] {
	case "community add":
		if err := want(3, "community add HOST [-owner PUBKEY] [-create-only]"); err != nil {
			return err
		}
		return a.communityAdd(ctx, w[2])
	case "community list":
		if err := want(2, "community list [-owner PUBKEY]"); err != nil {
			return err
		}
		return a.communityList(ctx)
	case "community archive", "community unarchive":
		if err := want(3, w[1]+" HOST"); err != nil {
			return err
		}
		return a.communityArchive(ctx, w[2], w[1] == "archive")
	case "community transfer":
		if err := want(4, "community transfer HOST NEW_OWNER"); err != nil {
			return err
		}
		return a.communityTransfer(ctx, w[2], w[3])
	case "community profile":
		if err := want(3, "community profile HOST [-name N] [-description D] [-icon URL] [-contact URI]"); err != nil {
			return err
		}
		return a.communityProfile(ctx, w[2])
	case "community policy":
		if len(w) != 3 && len(w) != 4 {
			return usageError{err: errors.New("admin: want \"buzzd admin community policy HOST [open|members]\""), help: "buzzd admin help"}
		}
		access := ""
		if len(w) == 4 {
			access = w[3]
		}
		return a.communityPolicy(ctx, w[2], access)
	case "community kinds":
		if len(w) != 3 && len(w) != 4 {
			return usageError{err: errors.New("admin: want \"buzzd admin community kinds HOST [default|off|buzz|LIST]\""), help: "buzzd admin help"}
		}
		kinds := ""
		if len(w) == 4 {
			kinds = w[3]
		}
		return a.communityKinds(ctx, w[2], kinds)
	case "channel list":
		if err := want(3, "channel list HOST"); err != nil {
			return err
		}
		return a.channelList(ctx, w[2])
	case "member add":
		if err := want(4, "member add HOST PUBKEY [-role ROLE]"); err != nil {
			return err
		}
		role := a.flags.role
		if role == "" {
			role = string(channel.RoleMember)
		}
		return a.memberPut(ctx, w[2], w[3], role, "added")
	case "member role":
		if err := want(5, "member role HOST PUBKEY ROLE"); err != nil {
			return err
		}
		return a.memberPut(ctx, w[2], w[3], w[4], "role set")
	case "member remove":
		if err := want(4, "member remove HOST PUBKEY"); err != nil {
			return err
		}
		return a.memberRemove(ctx, w[2], w[3])
	case "token mint":
		if err := want(4, "token mint HOST PUBKEY -scopes S1,S2 [-name N] [-expires 30d]"); err != nil {
			return err
		}
		return a.tokenMint(ctx, w[2], w[3])
	case "token list":
		if err := want(3, "token list HOST"); err != nil {
			return err
		}
		return a.tokenList(ctx, w[2])
	case "token revoke":
		if err := want(4, "token revoke HOST ID"); err != nil {
			return err
		}
		return a.tokenRevoke(ctx, w[2], w[3])
	}
	return usageError{err: fmt.Errorf("admin: unknown command %q", strings.Join(w[:2], " ")), help: "buzzd admin help"}
}

// community resolves a HOST argument, archived communities included.
func (a *adminCmd) community(ctx context.Context, raw string) (store.Community, error) {
	host, err := tenant.NormalizeHost(raw)
	if err != nil {
		return store.Community{}, usageError{err: fmt.Errorf("%q is not a host", raw), help: "buzzd admin help"}
	}
	c, err := a.st.CommunityByHost(ctx, host)
	if errors.Is(err, store.ErrNoCommunity) {
		return c, fmt.Errorf("no community has the host %s", host)
	}
	return c, err
}

func (a *adminCmd) maxOwned() int {
	if a.cfg.Operator.MaxCommunitiesPerOwner > 0 {
		return a.cfg.Operator.MaxCommunitiesPerOwner
	}
	return operator.DefaultMaxCommunitiesPerOwner
}

func (a *adminCmd) communityAdd(ctx context.Context, raw string) error {
	host, err := tenant.NormalizeHost(raw)
	if err != nil || tenant.ValidateHost(host) != nil {
		return usageError{err: fmt.Errorf("%q is not a valid host", raw), help: "buzzd admin help"}
	}
	owner := ""
	if a.flags.owner != "" {
		if owner, err = nostr.ParsePubKey(a.flags.owner); err != nil {
			return usageError{err: errors.New("-owner: want 64 hex characters or an npub"), help: "buzzd admin help"}
		}
	}
	c, created, err := a.st.CreateCommunity(ctx, store.NewCommunity{Host: host, OwnerPubKey: owner, CreateOnly: a.flags.createOnly, MaxPerOwner: a.maxOwned()})
	if err != nil {
		return adminStoreError(err, a.maxOwned())
	}
	status := "existed"
	if created {
		status = "created"
		a.tellPods(ctx, c.ID, control.HostsChanged{Hosts: []string{c.Host}})
	}
	if a.flags.json {
		return writeJSONLine(a.out, toJSON(c, status))
	}
	_, err = fmt.Fprintf(a.out, "%s community %s for %s%s\n", status, c.ID, c.Host, ownerNote(c.OwnerPubKey))
	return err
}

func (a *adminCmd) communityList(ctx context.Context) error {
	var cs []store.Community
	var err error
	if a.flags.owner != "" {
		owner, perr := nostr.ParsePubKey(a.flags.owner)
		if perr != nil {
			return usageError{err: errors.New("-owner: want 64 hex characters or an npub"), help: "buzzd admin help"}
		}
		cs, err = a.st.OwnedCommunities(ctx, owner)
	} else {
		cs, err = a.st.Communities(ctx)
	}
	if err != nil {
		return err
	}
	_, _, main, err := a.mainHost(ctx)
	if err != nil {
		return fmt.Errorf("admin: community list: %w", err)
	}
	if a.flags.json {
		out := make([]communityJSON, 0, len(cs))
		for _, c := range cs {
			j := toJSON(c, "")
			j.MainHost = c.ID == main
			out = append(out, j)
		}
		return writeJSONLine(a.out, out)
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tCOMMUNITY\tOWNER\tCREATED\tSTATE")
	for _, c := range cs {
		state := "active"
		if c.Archived() {
			state = "archived " + c.ArchivedAt.UTC().Format(time.RFC3339)
		}
		if c.ID == main {
			state += " (the relay's main host)"
		}
		owner := "-"
		if c.OwnerPubKey != "" {
			owner = npubOr(c.OwnerPubKey)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Host, c.ID, owner, c.CreatedAt.UTC().Format(time.RFC3339), state)
	}
	return tw.Flush()
}

func (a *adminCmd) communityArchive(ctx context.Context, raw string, archived bool) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	if archived {
		if err := a.refuseMainHost(ctx, c, "community archive"); err != nil {
			return err
		}
	}
	c, changed, err := a.st.SetArchived(ctx, c.ID, c.OwnerPubKey, archived, a.maxOwned())
	if err != nil {
		return adminStoreError(err, a.maxOwned())
	}
	status := map[[2]bool]string{{true, true}: "archived", {true, false}: "already_archived", {false, true}: "unarchived", {false, false}: "already_active"}[[2]bool{archived, changed}]
	a.tellPods(ctx, c.ID, control.HostsChanged{Hosts: []string{c.Host}, Archived: c.Archived()})
	if archived {
		a.tellPods(ctx, c.ID, control.DisconnectCommunity{})
	}
	if a.flags.json {
		return writeJSONLine(a.out, toJSON(c, status))
	}
	_, err = fmt.Fprintf(a.out, "%s: %s (community %s)\n", strings.ReplaceAll(status, "_", " "), c.Host, c.ID)
	return err
}

// mainHost returns the relay's main host: the one buzzd recorded in the
// store (recorded true), else, before any buzzd recorded one, this
// command's RELAY_URL host; and its community (zero when none has it).
func (a *adminCmd) mainHost(ctx context.Context) (host string, recorded bool, c tenant.CommunityID, err error) {
	if ms, ok := a.st.(store.MainHostStore); ok {
		if host, err = ms.MainHost(ctx); err != nil {
			return "", false, c, fmt.Errorf("read the relay's main host: %w", err)
		}
	}
	recorded = host != ""
	if !recorded {
		host = a.cfg.RelayHost
	}
	com, err := a.st.CommunityByHost(ctx, host)
	switch {
	case errors.Is(err, store.ErrNoCommunity):
		return host, recorded, c, nil
	case err != nil:
		return "", false, c, fmt.Errorf("read the relay's main host: %w", err)
	}
	return host, recorded, com.ID, nil
}

// refuseMainHost returns an error when c is the community of the relay's
// main host: the host buzzd recorded in the store when it started
// (store.MainHostStore), which the relay must keep serving. Only when no
// buzzd has recorded one yet is it the host of this command's RELAY_URL.
// cmd names the refused command in the error.
func (a *adminCmd) refuseMainHost(ctx context.Context, c store.Community, cmd string) error {
	host, recorded, main, err := a.mainHost(ctx)
	if err != nil {
		return fmt.Errorf("admin: %s: %w", cmd, err)
	}
	if main != c.ID {
		return nil
	}
	source := "recorded by buzzd when it started"
	if !recorded {
		source = "RELAY_URL; no buzzd has recorded a main host in this store yet"
	}
	return fmt.Errorf("admin: %s: refused: %s is the relay's main host (%s, %s): the relay would answer 404 on its own address; to retire it, start buzzd with another RELAY_URL first",
		cmd, c.Host, host, source)
}

func (a *adminCmd) communityTransfer(ctx context.Context, raw, newOwnerRaw string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	newOwner, err := nostr.ParsePubKey(newOwnerRaw)
	if err != nil {
		return usageError{err: errors.New("NEW_OWNER: want 64 hex characters or an npub"), help: "buzzd admin help"}
	}
	c2, prev, changed, err := a.st.TransferCommunity(ctx, c.ID.UUID(), newOwner, c.OwnerPubKey, a.maxOwned())
	if err != nil {
		return adminStoreError(err, a.maxOwned())
	}
	status := "already_owner"
	if changed {
		status = "transferred"
	}
	if a.flags.json {
		j := toJSON(c2, status)
		return writeJSONLine(a.out, struct {
			communityJSON
			PreviousOwner string `json:"previous_owner,omitempty"`
		}{j, prev})
	}
	_, err = fmt.Fprintf(a.out, "%s: %s now belongs to %s (before: %s)\n", strings.ReplaceAll(status, "_", " "), c2.Host, npubOr(c2.OwnerPubKey), npubOr(prev))
	return err
}

// settingsJSON is a community's profile and policy in -json output.
type settingsJSON struct {
	CommunityID string                 `json:"community_id"`
	Host        string                 `json:"host"`
	Profile     store.CommunityProfile `json:"profile"`
	Access      string                 `json:"access"`
	Kinds       string                 `json:"kinds"` // "" follows the relay's list
}

func (a *adminCmd) printSettings(ctx context.Context, c store.Community) error {
	p, err := a.st.CommunityProfile(ctx, c.ID)
	if err != nil {
		return err
	}
	acc, err := a.st.CommunityAccess(ctx, c.ID)
	if err != nil {
		return err
	}
	kinds, err := a.st.CommunityKinds(ctx, c.ID)
	if err != nil {
		return err
	}
	if a.flags.json {
		return writeJSONLine(a.out, settingsJSON{CommunityID: c.ID.String(), Host: c.Host, Profile: p, Access: string(acc), Kinds: kinds})
	}
	shown := kinds
	if shown == "" {
		shown = "default (the relay's)"
	}
	_, err = fmt.Fprintf(a.out, "host         %s\nname         %s\ndescription  %s\nicon         %s\ncontact      %s\naccess       %s\nkinds        %s\n",
		c.Host, oneLine(p.Name), oneLine(p.Description), p.Icon, p.Contact, acc, shown)
	return err
}

// communityKinds shows, or with kinds set changes, the community's kind
// allow-list ("default" follows the relay's). Relay processes read it anew
// within seconds.
func (a *adminCmd) communityKinds(ctx context.Context, raw, kinds string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	if kinds != "" {
		if kinds == "default" {
			kinds = ""
		} else if _, err := messaging.ParseKinds(kinds); err != nil {
			return usageError{err: err, help: "buzzd admin help"}
		}
		if err := a.st.SetCommunityKinds(ctx, c.ID, kinds); err != nil {
			return err
		}
	}
	return a.printSettings(ctx, c)
}

func (a *adminCmd) communityProfile(ctx context.Context, raw string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	if len(a.flags.profile) > 0 {
		p, err := a.st.CommunityProfile(ctx, c.ID)
		if err != nil {
			return err
		}
		for k, v := range a.flags.profile {
			switch k {
			case "name":
				p.Name = v
			case "description":
				p.Description = v
			case "icon":
				p.Icon = v
			case "contact":
				p.Contact = v
			}
		}
		if err := p.Validate(); err != nil {
			return usageError{err: err, help: "buzzd admin help"}
		}
		if err := a.st.SetCommunityProfile(ctx, c.ID, p); err != nil {
			return err
		}
	}
	return a.printSettings(ctx, c)
}

func (a *adminCmd) communityPolicy(ctx context.Context, raw, access string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	if access != "" {
		p := channel.AccessPolicy(access)
		if !p.Valid() {
			return usageError{err: errors.New(`policy: want "open" or "members"`), help: "buzzd admin help"}
		}
		if err := a.st.SetCommunityAccess(ctx, c.ID, p); err != nil {
			return err
		}
		a.tellPods(ctx, c.ID, control.PolicyChanged{Access: access})
	}
	return a.printSettings(ctx, c)
}

// channelJSON is a channel in -json output. GroupID is the channel's
// NIP-29 group id, the h tag value clients know it by; ID is its storage
// key (a UUID, equal to GroupID for channels Buzz's clients created).
type channelJSON struct {
	GroupID    string `json:"group_id"`
	ID         string `json:"id"`
	Name       string `json:"name"`
	Visibility string `json:"visibility"`
	Type       string `json:"type"`
	CreatedBy  string `json:"created_by"`
	CreatedAt  int64  `json:"created_at"`
}

func (a *adminCmd) channelList(ctx context.Context, raw string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	chs, err := a.st.Channels(ctx, c.ID)
	if err != nil {
		return err
	}
	if a.flags.json {
		out := make([]channelJSON, 0, len(chs))
		for _, ch := range chs {
			out = append(out, channelJSON{GroupID: ch.GroupID(), ID: uuidText(ch.ID), Name: ch.Name, Visibility: string(ch.Visibility), Type: string(ch.Type), CreatedBy: ch.CreatedBy, CreatedAt: ch.CreatedAt})
		}
		return writeJSONLine(a.out, out)
	}
	// The group id first, as clients show it; the storage key last, only
	// where it differs (a channel created with a name for an id).
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tNAME\tVISIBILITY\tTYPE\tCREATED\tKEY")
	for _, ch := range chs {
		key := "-"
		if ch.GroupID() != uuidText(ch.ID) {
			key = uuidText(ch.ID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ch.GroupID(), oneLine(ch.Name), ch.Visibility, ch.Type, time.Unix(ch.CreatedAt, 0).UTC().Format(time.RFC3339), key)
	}
	return tw.Flush()
}

// memberJSON is a membership change in -json output.
type memberJSON struct {
	CommunityID string `json:"community_id"`
	Host        string `json:"host"`
	PubKey      string `json:"pubkey"`
	Role        string `json:"role,omitempty"`
	Status      string `json:"status"`
}

func (a *adminCmd) memberPut(ctx context.Context, raw, pkRaw, roleRaw, status string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	pk, err := nostr.ParsePubKey(pkRaw)
	if err != nil {
		return usageError{err: errors.New("PUBKEY: want 64 hex characters or an npub"), help: "buzzd admin help"}
	}
	role := channel.Role(roleRaw)
	if !store.ValidCommunityRole(role) {
		return usageError{err: fmt.Errorf("role %q: want admin, moderator or member", roleRaw), help: "buzzd admin help"}
	}
	if err := a.st.PutCommunityMember(ctx, c.ID, pk, role); err != nil {
		return err
	}
	a.tellPods(ctx, c.ID, control.MembershipChanged{})
	if a.flags.json {
		return writeJSONLine(a.out, memberJSON{CommunityID: c.ID.String(), Host: c.Host, PubKey: pk, Role: string(role), Status: strings.ReplaceAll(status, " ", "_")})
	}
	_, err = fmt.Fprintf(a.out, "%s: %s is %s of %s\n", status, npubOr(pk), role, c.Host)
	return err
}

func (a *adminCmd) memberRemove(ctx context.Context, raw, pkRaw string) error {
	c, err := a.community(ctx, raw)
	if err != nil {
		return err
	}
	pk, err := nostr.ParsePubKey(pkRaw)
	if err != nil {
		return usageError{err: errors.New("PUBKEY: want 64 hex characters or an npub"), help: "buzzd admin help"}
	}
	if err := a.st.RemoveCommunityMember(ctx, c.ID, pk); err != nil {
		return err
	}
	// Other pods close what the removed member may no longer read.
	a.tellPods(ctx, c.ID, control.MembershipChanged{PubKey: pk})
	if a.flags.json {
		return writeJSONLine(a.out, memberJSON{CommunityID: c.ID.String(), Host: c.Host, PubKey: pk, Status: "removed"})
	}
	_, err = fmt.Fprintf(a.out, "removed: %s from %s\n", npubOr(pk), c.Host)
	return err
}

// tellPods publishes m to the running pods when REDIS_URL is set; without
// it there is no bus to reach them (they see host changes when their cache
// entries expire). A failure is reported on the log, not as an error: the
// change itself is committed.
func (a *adminCmd) tellPods(ctx context.Context, c tenant.CommunityID, m control.Message) {
	if a.cfg.Cluster.RedisURL == "" {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ns := a.cfg.Cluster.RedisNamespace
	if ns == "" {
		ns = redis.DefaultNamespace
	}
	b, err := redis.New(cctx, a.cfg.Cluster.RedisURL, redis.WithNamespace(ns), redis.WithClientName("buzzd-admin"), redis.WithLogger(a.log))
	if err == nil {
		err = b.PublishControl(cctx, c, m)
		_ = b.Close()
	}
	if err != nil {
		a.log.Warn("admin: running pods were not told of the change; they see it when their caches expire", "redis", cluster.RedactURL(a.cfg.Cluster.RedisURL), "err", err)
	}
}

// adminStoreError turns the registry's sentinel errors into sentences.
func adminStoreError(err error, maxOwned int) error {
	switch {
	case errors.Is(err, store.ErrCommunityExists):
		return errors.New("the host is already mapped to a community (-create-only)")
	case errors.Is(err, store.ErrCommunityLimit):
		return fmt.Errorf("the owner already has %d active communities (BUZZ_MAX_COMMUNITIES_PER_OWNER)", maxOwned)
	case errors.Is(err, store.ErrOwnerConflict):
		return errors.New("the community already belongs to another owner")
	case errors.Is(err, store.ErrInvalidHost):
		return errors.New("invalid host")
	}
	return err
}

func ownerNote(pk string) string {
	if pk == "" {
		return " (no owner)"
	}
	return " (owner " + npubOr(pk) + ")"
}

// npubOr returns pk as an npub, or pk itself if it cannot be encoded.
func npubOr(pk string) string {
	if pk == "" {
		return "-"
	}
	if n, err := nostr.EncodeNpub(pk); err == nil {
		return n
	}
	return pk
}

func uuidText(id channel.ID) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:])
}

// oneLine keeps a client-chosen name on one line of the table.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
