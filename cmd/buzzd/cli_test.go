package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
)

// adminRun runs "buzzd admin args…" through run with env, and returns stdout
// and the error.
func adminRun(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"admin"}, args...), envMap(env), nil, &out, &errOut)
	return out.String(), err
}

func TestAdminKeygen(t *testing.T) {
	out, err := adminRun(t, nil, "keygen", "-json")
	if err != nil {
		t.Fatal(err)
	}
	var kp keyPair
	if err := json.Unmarshal([]byte(out), &kp); err != nil {
		t.Fatalf("keygen -json: %v: %s", err, out)
	}
	sk, err := nostr.ParseSecretKey(kp.SecretKey)
	if err != nil || sk.PublicKey() != kp.PubKey {
		t.Fatalf("key pair does not match: %+v", kp)
	}
	// go-nostr decodes the bech32 forms independently.
	if p, v, err := nip19.Decode(kp.Npub); err != nil || p != "npub" || v.(string) != kp.PubKey {
		t.Fatalf("npub %s: %v %v", kp.Npub, v, err)
	}
	if p, v, err := nip19.Decode(kp.Nsec); err != nil || p != "nsec" || v.(string) != kp.SecretKey {
		t.Fatalf("nsec: %v %v", v, err)
	}
	human, err := adminRun(t, nil, "keygen")
	if err != nil || !strings.Contains(human, "npub1") || !strings.Contains(human, "nsec1") {
		t.Fatalf("keygen: %v\n%s", err, human)
	}
}

// TestAdminCLI runs every admin command against both backends and checks
// the store and its audit chain afterwards.
func TestAdminCLI(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		adminCLI(t, map[string]string{"BUZZ_DATA_DIR": dir}, func(t *testing.T) adminStore {
			st, err := embedded.Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			return st
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := freshDatabase(t)
		adminCLI(t, map[string]string{"DATABASE_URL": url, "BUZZ_AUTO_MIGRATE": "on"}, func(t *testing.T) adminStore {
			st, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			return st
		})
	})
}

func adminCLI(t *testing.T, env map[string]string, open func(t *testing.T) adminStore) {
	env["RELAY_URL"] = "ws://boot.example"
	env["BUZZ_LOG_LEVEL"] = "error"
	_, alice := newKey(t)
	_, bob := newKey(t)
	_, carol := newKey(t)
	_, actor := newKey(t)
	aliceNpub, _ := nip19.EncodePublicKey(alice)
	carolNpub, _ := nip19.EncodePublicKey(carol)
	ctx := context.Background()
	must := func(args ...string) string {
		t.Helper()
		out, err := adminRun(t, env, append(args, "-actor", actor)...)
		if err != nil {
			t.Fatalf("admin %v: %v", args, err)
		}
		return out
	}
	jsonOf := func(out string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		return m
	}

	// community add: npub or hex owner, human or JSON output, idempotent.
	if out := must("community", "add", "team.example", "-owner", aliceNpub); !strings.HasPrefix(out, "created community ") || !strings.Contains(out, aliceNpub) {
		t.Fatalf("add: %q", out)
	}
	if m := jsonOf(must("community", "add", "Team.Example", "-owner", alice, "-json")); m["status"] != "existed" || m["owner_pubkey"] != alice {
		t.Fatalf("add again: %v", m)
	}
	if _, err := adminRun(t, env, "community", "add", "team.example", "-create-only"); err == nil {
		t.Fatal("-create-only on an existing host succeeded")
	}
	must("community", "add", "boot.example")
	must("community", "add", "second.example")

	// community list, all and by owner.
	var all []communityJSON
	if err := json.Unmarshal([]byte(must("community", "list", "-json")), &all); err != nil || len(all) != 3 {
		t.Fatalf("list: %v %+v", err, all)
	}
	for _, c := range all { // no buzzd recorded one: RELAY_URL's host
		if c.MainHost != (c.Host == "boot.example") {
			t.Fatalf("list: main_host marks %+v", all)
		}
	}
	var mine []communityJSON
	if err := json.Unmarshal([]byte(must("community", "list", "-owner", aliceNpub, "-json")), &mine); err != nil || len(mine) != 1 || mine[0].Host != "team.example" {
		t.Fatalf("list by owner: %v %+v", err, mine)
	}
	if out := must("community", "list"); !strings.Contains(out, "HOST") || !strings.Contains(out, "second.example") {
		t.Fatalf("list (human): %s", out)
	}

	// archive / unarchive; the RELAY_URL community is protected.
	if m := jsonOf(must("community", "archive", "team.example", "-json")); m["status"] != "archived" || m["archived_at"] == nil {
		t.Fatalf("archive: %v", m)
	}
	if _, err := adminRun(t, env, "community", "archive", "boot.example"); err == nil || !strings.Contains(err.Error(), "RELAY_URL") {
		t.Fatalf("archive the RELAY_URL community: %v", err)
	}
	if out := must("community", "unarchive", "team.example"); !strings.HasPrefix(out, "unarchived: team.example") {
		t.Fatalf("unarchive: %q", out)
	}

	// transfer.
	if m := jsonOf(must("community", "transfer", "team.example", bob, "-json")); m["status"] != "transferred" || m["owner_pubkey"] != bob || m["previous_owner"] != alice {
		t.Fatalf("transfer: %v", m)
	}

	// members: add (npub), role, remove.
	if m := jsonOf(must("member", "add", "team.example", carolNpub, "-role", "admin", "-json")); m["status"] != "added" || m["role"] != "admin" || m["pubkey"] != carol {
		t.Fatalf("member add: %v", m)
	}
	st := open(t)
	defer st.Close()
	team, err := st.CommunityByHost(ctx, "team.example")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok, err := st.CommunityRole(ctx, team.ID, carol); err != nil || !ok || r != channel.RoleAdmin {
		t.Fatalf("carol's role: %v %v %v", r, ok, err)
	}
	must("member", "role", "team.example", carol, "moderator")
	if r, _, _ := st.CommunityRole(ctx, team.ID, carol); r != store.RoleModerator {
		t.Fatalf("carol's role after member role: %v", r)
	}
	if _, err := adminRun(t, env, "member", "role", "team.example", carol, "emperor"); err == nil {
		t.Fatal("an unknown role was accepted")
	}
	must("member", "remove", "team.example", carolNpub)
	if _, ok, _ := st.CommunityRole(ctx, team.ID, carol); ok {
		t.Fatal("carol is still a member")
	}

	// profile and policy.
	var set settingsJSON
	if err := json.Unmarshal([]byte(must("community", "profile", "team.example", "-name", "Team", "-icon", "https://team.example/i.png", "-json")), &set); err != nil ||
		set.Profile.Name != "Team" || set.Profile.Icon != "https://team.example/i.png" || set.Access != "open" {
		t.Fatalf("profile: %v %+v", err, set)
	}
	if out := must("community", "profile", "team.example", "-contact", "mailto:t@team.example"); !strings.Contains(out, "Team") || !strings.Contains(out, "mailto:t@team.example") {
		t.Fatalf("profile keeps the other fields: %s", out)
	}
	if _, err := adminRun(t, env, "community", "profile", "team.example", "-icon", "javascript:alert(1)"); err == nil {
		t.Fatal("a bad icon was accepted")
	}
	if out := must("community", "policy", "team.example", "members"); !strings.Contains(out, "members") {
		t.Fatalf("policy: %s", out)
	}
	if _, err := adminRun(t, env, "community", "policy", "team.example", "everyone"); err == nil {
		t.Fatal("an unknown policy was accepted")
	}
	if p, _ := st.CommunityProfile(ctx, team.ID); p.Name != "Team" || p.Contact != "mailto:t@team.example" {
		t.Fatalf("stored profile: %+v", p)
	}
	if acc, _ := st.CommunityAccess(ctx, team.ID); acc != channel.AccessMembers {
		t.Fatalf("stored policy: %v", acc)
	}

	// channel list: one channel created through the store's own command path.
	sk, _ := nostr.GenerateSecretKey()
	ch := newUUID()
	ev := &nostr.Event{Kind: 9007, CreatedAt: 1_700_000_000, Tags: nostr.Tags{{"h", ch}, {"name", "general\nchat"}}}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	id, _ := channel.ParseID(ch)
	cmd, err := channel.ParseCommand(ev, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.(store.ChannelStore).ApplyChannelCommand(ctx, team.ID, cmd, ev); err != nil {
		t.Fatal(err)
	}
	// A channel named as NIP-29 clients name groups: its h tag is "general".
	ev2 := &nostr.Event{Kind: 9007, CreatedAt: 1_700_000_001, Tags: nostr.Tags{{"h", "general"}, {"name", "General"}}}
	if err := ev2.Sign(sk); err != nil {
		t.Fatal(err)
	}
	gid, _ := channel.ParseID("general")
	cmd2, err := channel.ParseCommand(ev2, gid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.(store.ChannelStore).ApplyChannelCommand(ctx, team.ID, cmd2, ev2); err != nil {
		t.Fatal(err)
	}
	var chans []channelJSON
	if err := json.Unmarshal([]byte(must("channel", "list", "team.example", "-json")), &chans); err != nil || len(chans) != 2 {
		t.Fatalf("channel list: %v %+v", err, chans)
	}
	byGroup := map[string]channelJSON{}
	for _, c := range chans {
		byGroup[c.GroupID] = c
	}
	if c := byGroup[ch]; c.ID != ch || c.Name != "general\nchat" {
		t.Fatalf("channel list, the UUID channel: %+v", chans)
	}
	if c := byGroup["general"]; c.ID != gid.String() || c.Name != "General" {
		t.Fatalf("channel list, the named channel: %+v", chans)
	}
	// Human output: each channel by its group id first; the storage key
	// only for the named one.
	out := must("channel", "list", "team.example")
	rows := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	if r := rows[ch]; len(r) == 0 || r[len(r)-1] != "-" || !strings.Contains(out, "general chat") {
		t.Fatalf("channel list (human), the UUID channel:\n%s", out)
	}
	if r := rows["general"]; len(r) == 0 || r[len(r)-1] != gid.String() {
		t.Fatalf("channel list (human), the named channel by its group id:\n%s", out)
	}
	if out := must("channel", "list", "second.example", "-json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("another community's channels: %s", out)
	}

	// Bad input: a clear error, nothing changed.
	for _, args := range [][]string{
		{"community", "add", "not a host"},
		{"community", "archive", "nowhere.example"},
		{"member", "add", "team.example", "npub1bad"},
		{"community", "frobnicate", "x"},
		{"community", "add", "x.example", "-bogus"},
	} {
		if _, err := adminRun(t, env, args...); err == nil {
			t.Errorf("admin %v succeeded", args)
		}
	}

	// Every change is in the community's audit chain, by the -actor.
	al, ok := st.(store.AuditLog)
	if !ok {
		t.Fatal("the store keeps no audit chain")
	}
	if err := al.SyncAudit(ctx); err != nil {
		t.Fatal(err)
	}
	es, err := al.AuditEntries(ctx, team.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[audit.Action]bool{}
	for _, e := range es {
		if e.Action != audit.ChannelCreated && e.Actor != actor {
			t.Errorf("%s entry by %q, want the -actor", e.Action, e.Actor)
		}
		seen[e.Action] = true
	}
	for _, a := range []audit.Action{audit.CommunityProvisioned, audit.CommunityArchived, audit.CommunityUnarchived,
		audit.CommunityTransferred, audit.CommunityMemberPut, audit.CommunityMemberRemoved,
		store.AuditProfileChanged, audit.CommunityPolicyChanged} {
		if !seen[a] {
			t.Errorf("no %s entry in %v", a, seen)
		}
	}
}

// TestAdminCLITellsPods: with REDIS_URL, the admin CLI's changes reach a
// running pod at once — a provisioned host is served, an archived
// community's sockets close (1008) and its host is refused, an unarchived
// one is served again — though the pod caches hosts for an hour.
func TestAdminCLITellsPods(t *testing.T) {
	requireRedis(t, "127.0.0.1:6379")
	dbURL := freshDatabase(t)
	d := startDeployment(t, 1, dbURL, "redis://127.0.0.1:6379", map[string]string{
		"BUZZ_HOST_CACHE_TTL": "1h", "BUZZ_HOST_NEGATIVE_CACHE_TTL": "1m",
	})
	p := d.pods[0]
	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": "redis://127.0.0.1:6379",
		"BUZZ_REDIS_NAMESPACE": strings.TrimPrefix(p.name, "pod-0-"), "RELAY_URL": "ws://" + hostAlpha}
	const host = "cli.scaleout.test"
	dl := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	refused := func() bool {
		ws, resp, err := dl.Dial("ws://127.0.0.1:"+strconv.Itoa(p.port), http.Header{"Host": {host}})
		if err == nil {
			ws.Close()
			return false
		}
		return resp != nil && resp.StatusCode == http.StatusNotFound
	}
	if !refused() { // now cached as unmapped for a minute
		t.Fatal("an unprovisioned host is served")
	}
	if _, err := adminRun(t, env, "community", "add", host); err != nil {
		t.Fatal(err)
	}
	p.waitHost(t, host)
	c := p.dial(t, host)
	if _, err := adminRun(t, env, "community", "archive", host); err != nil {
		t.Fatal(err)
	}
	_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := c.ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
				t.Fatalf("archived community's socket ended with %v, want close 1008", err)
			}
			break
		}
	}
	if !refused() {
		t.Fatal("the archived community is still served")
	}
	if _, err := adminRun(t, env, "community", "unarchive", host); err != nil {
		t.Fatal(err)
	}
	p.waitHost(t, host)
}
