package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// ModerationBackend is a backend with community roles and moderation state.
type ModerationBackend interface {
	store.Backend
	store.ChannelStore
	store.ModerationStore
	store.AuditLog
}

// RunModeration runs the moderation conformance suite
// (store.ModerationStore and the community moderator role) against fresh
// backends from open, one per subtest.
func RunModeration(t *testing.T, open func(t *testing.T) ModerationBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b ModerationBackend)
	}{
		{"ModeratorRole", testModeratorRole},
		{"BanUnban", testBanUnban},
		{"TimeoutExpiry", testTimeoutExpiry},
		{"RestrictionsList", testRestrictionsList},
		{"ActionLog", testActionLog},
		{"Reports", testReports},
		{"ResolveReport", testResolveReport},
		{"OpenReportsAcrossCommunities", testOpenReports},
		{"InvalidActions", testInvalidModeration},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

func twoCommunities(t *testing.T, b store.Backend) (tenant.CommunityID, tenant.CommunityID) {
	t.Helper()
	a, _, err := b.EnsureCommunity(ctxb(), "mod-a.example")
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := b.EnsureCommunity(ctxb(), "mod-b.example")
	if err != nil {
		t.Fatal(err)
	}
	return a, c
}

func hexKey(n int) string { return fmt.Sprintf("%064x", n) }

func testModeratorRole(t *testing.T, b ModerationBackend) {
	a, other := twoCommunities(t, b)
	pk := hexKey(7)
	if err := b.PutCommunityMember(ctxb(), a, pk, store.RoleModerator); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := b.CommunityRole(ctxb(), a, pk); err != nil || !ok || r != store.RoleModerator {
		t.Fatalf("role = %q %v %v, want moderator", r, ok, err)
	}
	if _, ok, err := b.CommunityRole(ctxb(), other, pk); err != nil || ok {
		t.Fatalf("role in another community = %v %v", ok, err)
	}
	if err := b.PutCommunityMember(ctxb(), a, pk, channel.RoleGuest); err == nil {
		t.Fatal("guest is no community role")
	}
}

func testBanUnban(t *testing.T, b ModerationBackend) {
	a, other := twoCommunities(t, b)
	mod, target := hexKey(1), hexKey(2)
	now := time.Unix(1_800_000_000, 0)
	rec, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionBan, Actor: mod, Target: target, Reason: "spam", EventID: hexKey(99)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Seq <= 0 || rec.CreatedAt.IsZero() || rec.Reason != "spam" {
		t.Fatalf("recorded %+v", rec)
	}
	rs, err := b.PubkeyRestrictions(ctxb(), a, target, now.Add(1000*time.Hour))
	if err != nil || len(rs) != 1 || rs[0].Kind != store.RestrictionBan || !rs[0].Until.IsZero() || rs[0].Reason != "spam" || rs[0].Actor != mod {
		t.Fatalf("restrictions = %+v, %v", rs, err)
	}
	if rs, err := b.PubkeyRestrictions(ctxb(), other, target, now); err != nil || len(rs) != 0 {
		t.Fatalf("a ban in A shows in B: %+v, %v", rs, err)
	}
	if _, err := b.Moderate(ctxb(), other, store.ModerationAction{Action: store.ActionUnban, Actor: mod, Target: target}, now); !errors.Is(err, store.ErrNotRestricted) {
		t.Fatalf("unban in B = %v, want ErrNotRestricted", err)
	}
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionUnban, Actor: mod, Target: target}, now); err != nil {
		t.Fatal(err)
	}
	if rs, err := b.PubkeyRestrictions(ctxb(), a, target, now); err != nil || len(rs) != 0 {
		t.Fatalf("after unban: %+v, %v", rs, err)
	}
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionUnban, Actor: mod, Target: target}, now); !errors.Is(err, store.ErrNotRestricted) {
		t.Fatalf("second unban = %v", err)
	}
	// A ban with an end.
	until := now.Add(time.Hour)
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionBan, Actor: mod, Target: target, Until: until}, now); err != nil {
		t.Fatal(err)
	}
	if rs, _ := b.PubkeyRestrictions(ctxb(), a, target, until.Add(-time.Second)); len(rs) != 1 || !rs[0].Until.Equal(until) {
		t.Fatalf("before the end: %+v", rs)
	}
	if rs, _ := b.PubkeyRestrictions(ctxb(), a, target, until); len(rs) != 0 {
		t.Fatalf("at the end: %+v", rs)
	}
}

func testTimeoutExpiry(t *testing.T, b ModerationBackend) {
	a, _ := twoCommunities(t, b)
	mod, target := hexKey(1), hexKey(2)
	now := time.Unix(1_800_000_000, 0)
	until := now.Add(10 * time.Minute)
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionTimeout, Actor: mod, Target: target, Until: until}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionBan, Actor: mod, Target: target}, now); err != nil {
		t.Fatal(err)
	}
	rs, err := b.PubkeyRestrictions(ctxb(), a, target, now)
	if err != nil || len(rs) != 2 || rs[0].Kind != store.RestrictionBan || rs[1].Kind != store.RestrictionTimeout || !rs[1].Until.Equal(until) {
		t.Fatalf("ban and timeout = %+v, %v", rs, err)
	}
	// A second timeout replaces the first.
	until2 := now.Add(20 * time.Minute)
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionTimeout, Actor: mod, Target: target, Until: until2}, now); err != nil {
		t.Fatal(err)
	}
	rs, _ = b.PubkeyRestrictions(ctxb(), a, target, until.Add(time.Second))
	if len(rs) != 2 || !rs[1].Until.Equal(until2) {
		t.Fatalf("replaced timeout = %+v", rs)
	}
	// Expired: no longer in force, and cannot be lifted.
	rs, _ = b.PubkeyRestrictions(ctxb(), a, target, until2)
	if len(rs) != 1 || rs[0].Kind != store.RestrictionBan {
		t.Fatalf("after the timeout = %+v", rs)
	}
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionUntimeout, Actor: mod, Target: target}, until2); !errors.Is(err, store.ErrNotRestricted) {
		t.Fatalf("untimeout of an expired timeout = %v", err)
	}
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionTimeout, Actor: mod, Target: target, Until: until2}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionUntimeout, Actor: mod, Target: target}, now); err != nil {
		t.Fatal(err)
	}
	rs, _ = b.PubkeyRestrictions(ctxb(), a, target, now)
	if len(rs) != 1 || rs[0].Kind != store.RestrictionBan {
		t.Fatalf("after untimeout = %+v", rs)
	}
}

func testRestrictionsList(t *testing.T, b ModerationBackend) {
	a, other := twoCommunities(t, b)
	now := time.Unix(1_800_000_000, 0)
	for i := 10; i < 15; i++ {
		if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionBan, Actor: hexKey(1), Target: hexKey(i)}, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionTimeout, Actor: hexKey(1), Target: hexKey(20), Until: now.Add(time.Minute)}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Moderate(ctxb(), other, store.ModerationAction{Action: store.ActionBan, Actor: hexKey(1), Target: hexKey(30)}, now); err != nil {
		t.Fatal(err)
	}
	page, err := b.Restrictions(ctxb(), a, now, "", 4)
	if err != nil || len(page) != 4 || page[0].PubKey != hexKey(10) || page[3].PubKey != hexKey(13) {
		t.Fatalf("page 1 = %+v, %v", page, err)
	}
	page, err = b.Restrictions(ctxb(), a, now, page[3].PubKey, 4)
	if err != nil || len(page) != 2 || page[0].PubKey != hexKey(14) || page[1].PubKey != hexKey(20) {
		t.Fatalf("page 2 = %+v, %v", page, err)
	}
	// The timeout is over a minute later; B's ban never shows in A.
	page, _ = b.Restrictions(ctxb(), a, now.Add(time.Minute), "", 100)
	if len(page) != 5 {
		t.Fatalf("after the timeout: %d restrictions", len(page))
	}
}

func testActionLog(t *testing.T, b ModerationBackend) {
	a, other := twoCommunities(t, b)
	now := time.Unix(1_800_000_000, 0)
	want := []string{store.ActionBan, store.ActionTimeout, store.ActionUnban, store.ActionUntimeout}
	for _, act := range want {
		m := store.ModerationAction{Action: act, Actor: hexKey(1), Target: hexKey(2), Reason: act}
		if act == store.ActionTimeout {
			m.Until = now.Add(time.Hour)
		}
		if _, err := b.Moderate(ctxb(), a, m, now); err != nil {
			t.Fatalf("%s: %v", act, err)
		}
	}
	// A refused action records nothing.
	if _, err := b.Moderate(ctxb(), a, store.ModerationAction{Action: store.ActionUnban, Actor: hexKey(1), Target: hexKey(2)}, now); !errors.Is(err, store.ErrNotRestricted) {
		t.Fatal(err)
	}
	log, err := b.ModerationActions(ctxb(), a, 0, 100)
	if err != nil || len(log) != 4 {
		t.Fatalf("log = %+v, %v", log, err)
	}
	for i, e := range log {
		if e.Action != want[3-i] || e.Actor != hexKey(1) || e.Target != hexKey(2) || e.Reason != e.Action {
			t.Fatalf("entry %d = %+v", i, e)
		}
	}
	if !log[2].Until.Equal(now.Add(time.Hour)) {
		t.Fatalf("timeout entry until = %v", log[2].Until)
	}
	page, err := b.ModerationActions(ctxb(), a, log[1].Seq, 1)
	if err != nil || len(page) != 1 || page[0].Seq != log[2].Seq {
		t.Fatalf("page before %d = %+v, %v", log[1].Seq, page, err)
	}
	if log, err := b.ModerationActions(ctxb(), other, 0, 100); err != nil || len(log) != 0 {
		t.Fatalf("B's log = %+v, %v", log, err)
	}
	// Every applied action is in the community's audit chain, in order.
	if err := b.SyncAudit(ctxb()); err != nil {
		t.Fatal(err)
	}
	entries, err := b.AuditEntries(ctxb(), a, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if strings.HasPrefix(string(e.Action), "moderation_") {
			got = append(got, strings.TrimPrefix(string(e.Action), "moderation_"))
			if e.Object != hexKey(2) {
				t.Fatalf("audit object = %q", e.Object)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audited actions = %v, want %v", got, want)
	}
	if rep, err := store.VerifyAudit(ctxb(), b, a); err != nil || rep.BrokenSeq != 0 {
		t.Fatalf("chain: %+v, %v", rep, err)
	}
}

func report(n int, reporter, target string) store.Report {
	return store.Report{ID: hexKey(1000 + n), Reporter: reporter, TargetPubKey: target, Type: "spam",
		CreatedAt: int64(1_800_000_000 + n), Raw: []byte(fmt.Sprintf(`{"n":%d}`, n))}
}

func testReports(t *testing.T, b ModerationBackend) {
	a, other := twoCommunities(t, b)
	alice, bob, mallory := hexKey(1), hexKey(2), hexKey(3)
	for i := 0; i < 5; i++ {
		r := report(i, alice, mallory)
		if i%2 == 1 {
			r.Reporter = bob
			r.TargetEvent = hexKey(5000 + i)
		}
		if err := b.AddReport(ctxb(), a, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddReport(ctxb(), a, report(0, alice, mallory)); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("repeat = %v, want ErrDuplicate", err)
	}
	// The same id in another community is another report.
	if err := b.AddReport(ctxb(), other, report(0, alice, mallory)); err != nil {
		t.Fatal(err)
	}
	all, err := b.Reports(ctxb(), a, store.ReportQuery{Limit: 100})
	if err != nil || len(all) != 5 {
		t.Fatalf("reports = %d, %v", len(all), err)
	}
	if all[0].ID != hexKey(1004) || all[4].ID != hexKey(1000) || all[0].Status != store.ReportOpen || string(all[4].Raw) != `{"n":0}` {
		t.Fatalf("order or content: %+v", all[0])
	}
	if all[1].TargetEvent != hexKey(5003) || all[0].TargetEvent != "" || all[0].TargetPubKey != mallory || all[0].Type != "spam" {
		t.Fatalf("targets: %+v / %+v", all[0], all[1])
	}
	mine, err := b.Reports(ctxb(), a, store.ReportQuery{Reporter: bob, Limit: 100})
	if err != nil || len(mine) != 2 {
		t.Fatalf("bob's = %d, %v", len(mine), err)
	}
	page, err := b.Reports(ctxb(), a, store.ReportQuery{Before: all[1].Seq, Limit: 2})
	if err != nil || len(page) != 2 || page[0].ID != all[2].ID {
		t.Fatalf("page = %+v, %v", page, err)
	}
	win, err := b.Reports(ctxb(), a, store.ReportQuery{Since: 1_800_000_001, Until: 1_800_000_002, Limit: 100})
	if err != nil || len(win) != 2 {
		t.Fatalf("since/until = %d, %v", len(win), err)
	}
	if rs, err := b.Reports(ctxb(), other, store.ReportQuery{Limit: 100}); err != nil || len(rs) != 1 {
		t.Fatalf("B's = %d, %v", len(rs), err)
	}
}

func testResolveReport(t *testing.T, b ModerationBackend) {
	a, other := twoCommunities(t, b)
	mod := hexKey(9)
	now := time.Unix(1_800_000_000, 0)
	r := report(1, hexKey(1), hexKey(2))
	if err := b.AddReport(ctxb(), a, r); err != nil {
		t.Fatal(err)
	}
	resolve := func(c tenant.CommunityID, id string, st store.ReportStatus) error {
		_, err := b.Moderate(ctxb(), c, store.ModerationAction{Action: store.ActionResolveReport, Actor: mod, Target: id, Status: st}, now)
		return err
	}
	if err := resolve(other, r.ID, store.ReportResolved); !errors.Is(err, store.ErrNoReport) {
		t.Fatalf("resolve from B = %v, want ErrNoReport", err)
	}
	if err := resolve(a, hexKey(4242), store.ReportResolved); !errors.Is(err, store.ErrNoReport) {
		t.Fatalf("unknown = %v", err)
	}
	if err := resolve(a, r.ID, store.ReportEscalated); err != nil {
		t.Fatal(err)
	}
	if open, _ := b.Reports(ctxb(), a, store.ReportQuery{Status: store.ReportOpen, Limit: 10}); len(open) != 0 {
		t.Fatalf("escalated report still open: %+v", open)
	}
	if err := resolve(a, r.ID, store.ReportDismissed); err != nil {
		t.Fatal(err)
	}
	if err := resolve(a, r.ID, store.ReportResolved); !errors.Is(err, store.ErrReportClosed) {
		t.Fatalf("closed = %v, want ErrReportClosed", err)
	}
	got, err := b.Reports(ctxb(), a, store.ReportQuery{Status: store.ReportDismissed, Limit: 10})
	if err != nil || len(got) != 1 || got[0].ResolvedBy != mod || got[0].ResolvedAt.IsZero() {
		t.Fatalf("dismissed = %+v, %v", got, err)
	}
	log, _ := b.ModerationActions(ctxb(), a, 0, 10)
	if len(log) != 2 || log[0].Status != store.ReportDismissed || log[0].Target != r.ID || log[0].Action != store.ActionResolveReport {
		t.Fatalf("log = %+v", log)
	}
}

func testOpenReports(t *testing.T, b ModerationBackend) {
	a, other := twoCommunities(t, b)
	if err := b.AddReport(ctxb(), a, report(1, hexKey(1), hexKey(2))); err != nil {
		t.Fatal(err)
	}
	if err := b.AddReport(ctxb(), other, report(2, hexKey(1), hexKey(2))); err != nil {
		t.Fatal(err)
	}
	if err := b.AddReport(ctxb(), other, report(3, hexKey(1), hexKey(2))); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Moderate(ctxb(), other, store.ModerationAction{Action: store.ActionResolveReport, Actor: hexKey(9), Target: hexKey(1003), Status: store.ReportResolved}, time.Now()); err != nil {
		t.Fatal(err)
	}
	open, err := b.OpenReports(ctxb(), 100)
	if err != nil || len(open) != 2 {
		t.Fatalf("open = %+v, %v", open, err)
	}
	hosts := map[string]string{}
	for _, r := range open {
		hosts[r.ID] = r.Host
		want := a
		if r.ID == hexKey(1002) {
			want = other
		}
		if r.Community != want {
			t.Fatalf("report %s in %v, want %v", r.ID, r.Community, want)
		}
	}
	if hosts[hexKey(1001)] != "mod-a.example" || hosts[hexKey(1002)] != "mod-b.example" {
		t.Fatalf("hosts = %v", hosts)
	}
	if one, err := b.OpenReports(ctxb(), 1); err != nil || len(one) != 1 {
		t.Fatalf("limit 1 = %d, %v", len(one), err)
	}
}

func testInvalidModeration(t *testing.T, b ModerationBackend) {
	a, _ := twoCommunities(t, b)
	now := time.Now()
	for _, m := range []store.ModerationAction{
		{Action: "kick", Actor: hexKey(1), Target: hexKey(2)},
		{Action: store.ActionTimeout, Actor: hexKey(1), Target: hexKey(2)}, // no end
		{Action: store.ActionBan, Actor: "xyz", Target: hexKey(2)},
		{Action: store.ActionBan, Actor: hexKey(1), Target: "ABC"},
		{Action: store.ActionResolveReport, Actor: hexKey(1), Target: hexKey(2), Status: store.ReportOpen},
	} {
		if _, err := b.Moderate(ctxb(), a, m, now); !errors.Is(err, store.ErrInvalidModeration) {
			t.Fatalf("%+v: %v, want ErrInvalidModeration", m, err)
		}
	}
	if err := b.AddReport(ctxb(), a, store.Report{ID: "x"}); !errors.Is(err, store.ErrInvalidModeration) {
		t.Fatalf("bad report: %v", err)
	}
	if log, _ := b.ModerationActions(ctxb(), a, 0, 10); len(log) != 0 {
		t.Fatalf("invalid actions were logged: %+v", log)
	}
}
