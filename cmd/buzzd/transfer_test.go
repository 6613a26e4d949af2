package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/store/storetest"
	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// seedTransfer fills an embedded store (the default engine) with two
// communities and every kind of state an export carries; it returns the
// pubkeys and event ids that belong to community a.example only.
func seedTransfer(t *testing.T, dir string) (aOnly []string) {
	t.Helper()
	ctx := audit.WithActor(context.Background(), strings.Repeat("0f", 32))
	st, err := embedded.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	alice, bob, carol, dave := storetest.NewAuthor(t), storetest.NewAuthor(t), storetest.NewAuthor(t), storetest.NewAuthor(t)
	aOnly = append(aOnly, alice.PubKey, bob.PubKey, carol.PubKey)

	a, _, err := st.CreateCommunity(ctx, store.NewCommunity{Host: "a.example", OwnerPubKey: alice.PubKey})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.AddHostAlias(ctx, "alias-a.example", a.ID))
	must(st.SetCommunityAccess(ctx, a.ID, channel.AccessMembers))
	must(st.SetCommunityProfile(ctx, a.ID, store.CommunityProfile{Name: "A <&> community", Description: "the first", Contact: "mailto:a@a.example"}))
	must(st.PutCommunityMember(ctx, a.ID, bob.PubKey, store.RoleModerator))
	must(st.PutCommunityMember(ctx, a.ID, carol.PubKey, channel.RoleMember))
	open := storetest.CreateChannel(t, st, a.ID, alice, "general", channel.VisibilityOpen)
	private := storetest.CreateChannel(t, st, a.ID, alice, "staff", channel.VisibilityPrivate)
	storetest.MustApply(t, st, a.ID, alice, channel.Command{Kind: nostr.KindPutUser, Channel: private, Target: bob.PubKey, Role: channel.RoleAdmin})
	storetest.MustApply(t, st, a.ID, alice, channel.Command{Kind: nostr.KindPutUser, Channel: open, Target: carol.PubKey, Role: "scribe"})
	gone := storetest.CreateChannel(t, st, a.ID, alice, "old", channel.VisibilityOpen)
	storetest.MustApply(t, st, a.ID, alice, channel.Command{Kind: nostr.KindDeleteChannel, Channel: gone})
	must(st.SetName(ctx, a.ID, alice.PubKey, "Alice"))
	must(st.SetName(ctx, a.ID, bob.PubKey, "bob"))

	base := int64(1_750_000_000)
	var notes []*nostr.Event
	for i := range 40 {
		ev := alice.Event(t, nostr.KindNote, base+int64(i), "note <"+string(rune('a'+i%26))+"> & \u2028 \"q\"")
		notes = append(notes, ev)
		storetest.MustSave(t, st, a.ID, ev)
	}
	storetest.MustSave(t, st, a.ID, alice.Event(t, 0, base, `{"name":"alice"}`))
	storetest.MustSave(t, st, a.ID, alice.Event(t, 30023, base+1, "article", nostr.Tag{"d", "x"}))
	storetest.MustSave(t, st, a.ID, bob.Event(t, nostr.KindChatMessage, base+2, "in staff", nostr.Tag{"h", private.String()}))
	storetest.MustSave(t, st, a.ID, carol.Event(t, nostr.KindChatMessage, base+3, "in general", nostr.Tag{"h", open.String()}))
	storetest.MustSave(t, st, a.ID, alice.Deletion(t, base+50, []string{notes[3].ID}, nil))
	for _, ev := range notes {
		aOnly = append(aOnly, ev.ID)
	}

	now := time.Unix(base+100, 0)
	if _, err := st.Moderate(ctx, a.ID, store.ModerationAction{Action: store.ActionBan, Actor: bob.PubKey, Target: dave.PubKey, Reason: "spam"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Moderate(ctx, a.ID, store.ModerationAction{Action: store.ActionTimeout, Actor: bob.PubKey, Target: carol.PubKey,
		Until: time.Unix(4_000_000_000, 0)}, now); err != nil {
		t.Fatal(err)
	}
	rep := carol.Event(t, nostr.KindReport, base+5, "rude", nostr.Tag{"p", dave.PubKey, "spam"})
	must(st.AddReport(ctx, a.ID, store.Report{ID: rep.ID, Reporter: carol.PubKey, TargetPubKey: dave.PubKey, Type: "spam", CreatedAt: rep.CreatedAt, Raw: rep.AppendJSON(nil)}))
	if _, err := st.Moderate(ctx, a.ID, store.ModerationAction{Action: store.ActionResolveReport, Actor: bob.PubKey, Target: rep.ID,
		Status: store.ReportResolved}, now); err != nil {
		t.Fatal(err)
	}

	seedWorkflow(t, ctx, st, a.ID, open, alice.PubKey)

	b, _, err := st.EnsureCommunity(ctx, "b.example")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		storetest.MustSave(t, st, b, dave.Event(t, nostr.KindNote, base+int64(i), "b note"))
	}
	must(st.SetName(ctx, b, dave.PubKey, "alice")) // the same name, another community
	return aOnly
}

// seedWorkflow adds to community c a schedule-triggered workflow with a
// webhook secret hash, one fired slot, its run parked on an approval with
// a recorded effect, and the approval.
func seedWorkflow(t *testing.T, ctx context.Context, st *embedded.Store, c tenant.CommunityID, ch channel.ID, owner string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	def, err := workflow.Parse([]byte("name: Tick\ntrigger: {on: schedule, interval: 1h}\nsteps:\n  - {id: ask, action: request_approval, message: \"ok <now>?\"}\n"), nil)
	must(err)
	wf, err := st.PutWorkflow(ctx, c, workflow.PutWorkflow{ID: workflow.NewID(), Channel: ch, Owner: owner, Definition: def})
	must(err)
	_, err = st.SetWebhookSecret(ctx, c, wf.ID, sha256.Sum256([]byte("secret")), false)
	must(err)
	slot := time.UnixMilli(1_750_003_600_000).UTC()
	run, _, fired, err := st.FireSchedule(ctx, c, workflow.ScheduleFire{Workflow: wf.ID, Seen: time.UnixMilli(0), Next: slot.Add(time.Hour),
		Slot: slot, Trigger: map[string]any{"scheduled_for": slot.Unix(), "text": "tick"}})
	must(err)
	if !fired {
		t.Fatal("schedule did not fire")
	}
	leases, err := st.ClaimRuns(ctx, "seed", time.Minute, 10)
	must(err)
	if len(leases) != 1 || leases[0].Run != run.ID {
		t.Fatalf("claimed %v", leases)
	}
	l := leases[0]
	_, _, err = st.BeginEffect(ctx, l, "ask/post", []byte(`{"kind":9}`))
	must(err)
	must(st.FinishEffect(ctx, l, "ask/post", []byte(`{"ok":true}`)))
	must(st.CreateApproval(ctx, c, workflow.Approval{TokenHash: sha256.Sum256([]byte("token")), Workflow: wf.ID, Run: run.ID, StepID: "ask",
		Approver: workflow.ApproverAny, Message: "ok <now>?", Status: workflow.ApprovalPending, ExpiresAt: time.UnixMilli(4_000_000_000_123)}))
	must(st.UpdateRun(ctx, l, workflow.RunUpdate{Status: workflow.RunWaitingApproval, Trace: []workflow.StepTrace{{StepID: "ask",
		Status: workflow.StepCompleted, Output: map[string]any{"approval_id": "x", "n": 1.5}, StartedAt: slot, FinishedAt: slot.Add(time.Second)}},
		ResumeAt: time.UnixMilli(4_000_000_000_000)}))
}

// buzzdRun runs buzzd with env and returns its stdout and stderr.
func buzzdRun(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, envMap(env), nil, &out, &errOut)
	return out.String(), errOut.String(), err
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExportImportRoundTrip moves a deployment embedded → PostgreSQL →
// embedded with buzzd export and import: the three exports are identical
// bytes, the audit chains verify on each store, and a second import adds
// nothing.
func TestExportImportRoundTrip(t *testing.T) {
	tmp := t.TempDir()
	src := map[string]string{"BUZZ_DATA_DIR": filepath.Join(tmp, "one")}
	pg := map[string]string{"DATABASE_URL": pgtest.NewDatabase(t)}
	back := map[string]string{"BUZZ_DATA_DIR": filepath.Join(tmp, "three")}
	seedTransfer(t, src["BUZZ_DATA_DIR"])

	exportTo := func(env map[string]string, name string) []byte {
		t.Helper()
		path := filepath.Join(tmp, name)
		if _, e, err := buzzdRun(t, env, "export", "-all", "-o", path); err != nil {
			t.Fatalf("export %s: %v\n%s", name, err, e)
		}
		return readFile(t, path)
	}
	importFrom := func(env map[string]string, name string) string {
		t.Helper()
		out, e, err := buzzdRun(t, env, "import", "-f", filepath.Join(tmp, name))
		if err != nil {
			t.Fatalf("import %s: %v\n%s%s", name, err, out, e)
		}
		return out
	}
	verify := func(env map[string]string) {
		t.Helper()
		out, _, err := buzzdRun(t, env, "audit", "verify", "-all")
		if err != nil || strings.Count(out, ": ok, ") != 2 {
			t.Fatalf("audit verify: %v\n%s", err, out)
		}
	}

	one := exportTo(src, "one.jsonl")
	checkExport(t, one)
	verify(src)

	first := importFrom(pg, "one.jsonl")
	if !strings.Contains(first, "events: 60 read, 60 new, 0 duplicate") {
		t.Fatalf("first import:\n%s", first)
	}
	second := importFrom(pg, "one.jsonl")
	if !strings.Contains(second, "events: 60 read, 0 new, 60 duplicate") {
		t.Fatalf("second import:\n%s", second)
	}
	for _, l := range strings.Split(strings.TrimSpace(second), "\n") {
		if strings.Contains(l, " read, ") && !strings.HasPrefix(l, "events:") && !strings.HasSuffix(l, ", 0 new") {
			t.Errorf("second import changed state: %q", l)
		}
	}
	verify(pg)
	pgStore, err := postgres.Open(context.Background(), pg["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	checkRestoredWorkflow(t, pgStore)
	pgStore.Close()
	two := exportTo(pg, "two.jsonl")
	if !bytes.Equal(one, two) {
		t.Fatalf("embedded and PostgreSQL exports differ:\n%s", firstDiff(one, two))
	}

	importFrom(back, "two.jsonl")
	verify(back)
	backStore, err := embedded.Open(context.Background(), back["BUZZ_DATA_DIR"])
	if err != nil {
		t.Fatal(err)
	}
	checkRestoredWorkflow(t, backStore)
	backStore.Close()
	three := exportTo(back, "three.jsonl")
	if !bytes.Equal(one, three) {
		t.Fatalf("round-trip export differs:\n%s", firstDiff(one, three))
	}
}

// checkExport checks the shape of an export of seedTransfer's data.
func checkExport(t *testing.T, data []byte) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if string(lines[0]) != `{"buzz_export":1}` {
		t.Fatalf("header %s", lines[0])
	}
	types := map[string]int{}
	for _, l := range lines[1:] {
		var r struct{ Type string }
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("line %s: %v", l, err)
		}
		types[r.Type]++
	}
	want := map[string]int{"community": 2, "member": 2, "channel": 3, "channel_member": 5, "name": 3,
		"restriction": 2, "report": 1, "moderation_action": 3, "event": 60, "end": 1,
		"workflow": 1, "workflow_run": 1, "approval": 1, "schedule_fire": 1}
	for typ, n := range want {
		if types[typ] != n {
			t.Errorf("%d %s records, want %d (all: %v)", types[typ], typ, n, types)
		}
	}
	if types["audit"] < 10 {
		t.Errorf("%d audit records", types["audit"])
	}
	if !bytes.Contains(data, []byte(`note <a> & \u2028 \"q\"`)) && !bytes.Contains(data, []byte("note <a> & \u2028 \\\"q\\\"")) {
		t.Errorf("event content not carried verbatim")
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "line " + itoa(i+1) + ":\n  " + la[i] + "\n  " + lb[i]
		}
	}
	return "lengths " + itoa(len(la)) + " and " + itoa(len(lb))
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestExportTenancy: an export of one host holds nothing of another
// community, and an unknown host is an error.
func TestExportTenancy(t *testing.T) {
	dir := t.TempDir()
	aOnly := seedTransfer(t, dir)
	env := map[string]string{"BUZZ_DATA_DIR": dir}
	out, _, err := buzzdRun(t, env, "export", "-host", "B.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range append(aOnly, "a.example", "staff", "general", "Alice", "spam") {
		if strings.Contains(out, secret) {
			t.Errorf("export of b.example holds %q", secret)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r struct{ Type, Host string }
		_ = json.Unmarshal(sc.Bytes(), &r)
		if r.Type != "" && r.Type != "end" && r.Host != "b.example" {
			t.Errorf("record of host %q: %s", r.Host, sc.Text())
		}
	}
	if strings.Count(out, `"type":"event"`) != 10 {
		t.Errorf("want b.example's 10 events")
	}
	if _, _, err := buzzdRun(t, env, "export", "-host", "nobody.example"); err == nil || !strings.Contains(err.Error(), "nobody.example") {
		t.Errorf("unknown host: %v", err)
	}
	var ue usageError
	if _, _, err := buzzdRun(t, env, "export", "-host", "a.example", "-all"); !errors.As(err, &ue) {
		t.Errorf("-host with -all: %v", err)
	}
	// An alias selects its community.
	out, _, err = buzzdRun(t, env, "export", "-host", "alias-a.example", "-since", "1750000030", "-until", "2025-06-15T15:08:00Z")
	if err != nil || strings.Contains(out, "b.example") || strings.Count(out, `"type":"event"`) == 0 {
		t.Errorf("alias export: %v", err)
	}
}

// TestImportRefusesTamperedEvents: an event line whose signature or id
// does not verify stops the import at that line, which changes nothing;
// -keep-going counts it and goes on.
func TestImportRefusesTamperedEvents(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	seedTransfer(t, src)
	good := filepath.Join(tmp, "good.jsonl")
	if _, e, err := buzzdRun(t, map[string]string{"BUZZ_DATA_DIR": src}, "export", "-host", "b.example", "-o", good); err != nil {
		t.Fatalf("%v\n%s", err, e)
	}
	lines := strings.Split(strings.TrimSuffix(string(readFile(t, good)), "\n"), "\n")
	var evLines []int
	for i, l := range lines {
		if strings.Contains(l, `"type":"event"`) {
			evLines = append(evLines, i)
		}
	}
	badSig, badID := evLines[2], evLines[5]
	// Another content: the id no longer matches.
	lines[badID] = strings.Replace(lines[badID], `"content":"b note"`, `"content":"b n0te"`, 1)
	// A flipped signature character.
	i := strings.Index(lines[badSig], `"sig":"`) + len(`"sig":"`)
	flip := byte('0')
	if lines[badSig][i] == '0' {
		flip = '1'
	}
	lines[badSig] = lines[badSig][:i] + string(flip) + lines[badSig][i+1:]
	bad := filepath.Join(tmp, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	dst := map[string]string{"BUZZ_DATA_DIR": filepath.Join(tmp, "dst")}
	out, _, err := buzzdRun(t, dst, "import", "-f", bad)
	want := "import: line " + itoa(badSig+1) + ": event "
	if err == nil || !strings.Contains(err.Error(), want) || exitCode(err, io.Discard) != 1 {
		t.Fatalf("import of a bad signature: %v, want %q\n%s", err, want, out)
	}
	// The events before the bad line are stored (batches are flushed at the
	// refusal), the bad one is not.
	st, err := embedded.Open(context.Background(), dst["BUZZ_DATA_DIR"])
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.LookupHost(context.Background(), "b.example")
	if err != nil {
		t.Fatal(err)
	}
	if n := storetest.CountOf(t, st, b, nostr.Filter{}); n != 0 && n != 2 {
		t.Errorf("%d events stored before the refused line, want at most the 2 before it", n)
	}
	st.Close()

	out, e, err := buzzdRun(t, dst, "import", "-f", bad, "-keep-going")
	if err != nil || !strings.Contains(out, "events: 10 read") || !strings.Contains(out, " 2 refused") ||
		strings.Count(e, "refused line ") != 2 {
		t.Fatalf("-keep-going: %v\n%s%s", err, out, e)
	}
	// A truncated export is reported.
	trunc := filepath.Join(tmp, "trunc.jsonl")
	if err := os.WriteFile(trunc, []byte(strings.Join(lines[:len(lines)-1], "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := buzzdRun(t, dst, "import", "-f", trunc, "-keep-going"); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("truncated: %v", err)
	}
	// So is a file that is no export.
	junk := filepath.Join(tmp, "junk")
	_ = os.WriteFile(junk, []byte(`{"id":"x"}`+"\n"), 0o600)
	if _, _, err := buzzdRun(t, dst, "import", "-f", junk); err == nil || !strings.Contains(err.Error(), "line 1: not a buzz export") {
		t.Errorf("junk: %v", err)
	}
}

// TestImportWorkflowIsolation: a workflow run and an approval carried
// under another community's host (naming workflow and run ids of the
// first) are refused on both backends: workflow state reaches only the
// community whose records introduced it.
func TestImportWorkflowIsolation(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	seedTransfer(t, src)
	good := filepath.Join(tmp, "good.jsonl")
	if _, e, err := buzzdRun(t, map[string]string{"BUZZ_DATA_DIR": src}, "export", "-all", "-o", good); err != nil {
		t.Fatalf("%v\n%s", err, e)
	}
	// The export orders communities by creation time, then id: a's
	// records may come before or after b's, so the moved lines are
	// gathered first and placed right after b's community record.
	var kept, moved, lines []string
	for _, l := range strings.Split(strings.TrimSuffix(string(readFile(t, good)), "\n"), "\n") {
		if strings.HasPrefix(l, `{"type":"workflow_run",`) || strings.HasPrefix(l, `{"type":"approval",`) {
			moved = append(moved, strings.Replace(l, `"host":"a.example"`, `"host":"b.example"`, 1))
			continue
		}
		kept = append(kept, l)
	}
	for _, l := range kept {
		lines = append(lines, l)
		if strings.HasPrefix(l, `{"type":"community","host":"b.example"`) {
			lines = append(lines, moved...)
		}
	}
	if len(moved) != 2 {
		t.Fatalf("moved %d lines", len(moved))
	}
	bad := filepath.Join(tmp, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]map[string]string{
		"embedded": {"BUZZ_DATA_DIR": filepath.Join(tmp, "dst")},
		"postgres": {"DATABASE_URL": pgtest.NewDatabase(t)},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := buzzdRun(t, env, "import", "-f", bad)
			if err == nil || !strings.Contains(err.Error(), "workflow_run: its workflow or run is not in the destination") {
				t.Fatalf("import: %v", err)
			}
			out, e, err := buzzdRun(t, env, "import", "-f", bad, "-keep-going")
			if err != nil || strings.Count(e, "refused line ") != 2 || !strings.Contains(out, "workflow: 1 read") {
				t.Fatalf("-keep-going: %v\n%s%s", err, out, e)
			}
			for _, h := range []string{"a.example", "b.example"} {
				exp, _, err := buzzdRun(t, env, "export", "-host", h)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(exp, `"type":"workflow_run"`) || strings.Contains(exp, `"type":"approval"`) {
					t.Errorf("%s holds a run or approval after the import", h)
				}
			}
		})
	}
}

// workflowReader is what the workflow engine reads of a store.
type workflowReader interface {
	LookupHost(ctx context.Context, host string) (tenant.CommunityID, error)
	Channels(ctx context.Context, c tenant.CommunityID) ([]channel.Channel, error)
	workflow.Store
	workflow.ApprovalStore
	workflow.WebhookSecretStore
}

// checkRestoredWorkflow reads seedWorkflow's state through the engine's
// own store calls: the workflow, its parked run, the approval, the claimed
// slot and the webhook secret hash are in a.example and nowhere else.
func checkRestoredWorkflow(t *testing.T, st workflowReader) {
	t.Helper()
	ctx := context.Background()
	a, err := st.LookupHost(ctx, "a.example")
	if err != nil {
		t.Fatal(err)
	}
	chans, err := st.Channels(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	var wfs []workflow.Workflow
	for _, ch := range chans {
		w, err := st.Workflows(ctx, a, ch.ID)
		if err != nil {
			t.Fatal(err)
		}
		wfs = append(wfs, w...)
	}
	if len(wfs) != 1 || wfs[0].Name != "Tick" || !wfs[0].Enabled {
		t.Fatalf("workflows %+v", wfs)
	}
	wf := wfs[0]
	runs, _, err := st.Runs(ctx, a, wf.ID, workflow.RunPage{})
	if err != nil || len(runs) != 1 || runs[0].Status != workflow.RunWaitingApproval || runs[0].DefinitionHash != wf.Hash || len(runs[0].Trace) != 1 {
		t.Fatalf("runs %+v: %v", runs, err)
	}
	run := runs[0]
	ap, err := st.Approval(ctx, a, sha256.Sum256([]byte("token")))
	if err != nil || ap.Run != run.ID || ap.Status != workflow.ApprovalPending || ap.Message != "ok <now>?" {
		t.Fatalf("approval %+v: %v", ap, err)
	}
	fires, err := st.ScheduledFires(ctx, a, wf.ID)
	if err != nil || len(fires) != 1 || fires[0].Run != run.ID || fires[0].Slot.UnixMilli() != 1_750_003_600_000 {
		t.Fatalf("fires %+v: %v", fires, err)
	}
	if h, ok, err := st.WebhookSecret(ctx, a, wf.ID); err != nil || !ok || h != sha256.Sum256([]byte("secret")) {
		t.Fatalf("webhook secret: %v %v", ok, err)
	}
	b, err := st.LookupHost(ctx, "b.example")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Workflow(ctx, b, wf.ID); !errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("b.example sees a.example's workflow: %v", err)
	}
	if _, err := st.Run(ctx, b, run.ID); !errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("b.example sees a.example's run: %v", err)
	}
	if _, err := st.Approval(ctx, b, ap.TokenHash); !errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("b.example sees a.example's approval: %v", err)
	}
}
