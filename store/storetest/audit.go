package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/tenant"
)

// AuditBackend is a backend with channels and audit chains.
type AuditBackend interface {
	ChannelBackend
	store.AuditLog
}

// operatorStore is the operator-plane part of a backend (operator.Store),
// restated here so storetest does not import operator.
type operatorStore interface {
	CreateCommunity(ctx context.Context, n store.NewCommunity) (store.Community, bool, error)
	SetArchived(ctx context.Context, id tenant.CommunityID, ownerPubKey string, archived bool, maxPerOwner int) (store.Community, bool, error)
	TransferCommunity(ctx context.Context, id [16]byte, newOwner, expectedOwner string, maxPerOwner int) (store.Community, string, bool, error)
}

// Tamperer edits a backend's stored audit rows behind its back, the way an
// attacker with database access would. Each method changes one community's
// chain; the tamper suite checks that VerifyAudit reports the damage.
type Tamperer interface {
	// UpdateDetail rewrites the detail of entry seq.
	UpdateDetail(t *testing.T, c tenant.CommunityID, seq int64)
	// Delete removes entry seq.
	Delete(t *testing.T, c tenant.CommunityID, seq int64)
	// Swap exchanges the seq numbers of entries a and b (a reorder).
	Swap(t *testing.T, c tenant.CommunityID, a, b int64)
}

// RunAudit runs the audit chain conformance suite (store.AuditLog and the
// entries backends append with their own changes) against fresh backends.
func RunAudit(t *testing.T, open func(t *testing.T) AuditBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b AuditBackend)
	}{
		{"AppendAndVerify", testAuditAppend},
		{"InvalidRecordAppendsNothing", testAuditInvalid},
		{"Paging", testAuditPaging},
		{"ChainsPerCommunity", testAuditIsolation},
		{"ChannelCommands", testAuditChannelCommands},
		{"CommunityPolicyAndMembers", testAuditCommunity},
		{"DeletionRequests", testAuditDeletion},
		{"OperatorActions", testAuditOperator},
		{"ConcurrentAppends", testAuditConcurrent},
		{"CanonicalDetail", testAuditCanonical},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// RunAuditTamper checks that VerifyAudit finds an UPDATE, a DELETE and a
// reorder of stored entries, each at the first seq it breaks.
func RunAuditTamper(t *testing.T, open func(t *testing.T) AuditBackend, tamper func(b AuditBackend) Tamperer) {
	cases := []struct {
		name string
		do   func(t *testing.T, tp Tamperer, c tenant.CommunityID)
		want int64
	}{
		{"Update", func(t *testing.T, tp Tamperer, c tenant.CommunityID) { tp.UpdateDetail(t, c, 4) }, 4},
		{"Delete", func(t *testing.T, tp Tamperer, c tenant.CommunityID) { tp.Delete(t, c, 3) }, 3},
		{"Reorder", func(t *testing.T, tp Tamperer, c tenant.CommunityID) { tp.Swap(t, c, 5, 6) }, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := open(t)
			ctx := context.Background()
			c := Community(t, b, "tamper.example")
			other := Community(t, b, "untouched.example")
			for _, cc := range []tenant.CommunityID{c, other} {
				for i := range 8 {
					mustAppend(t, b, cc, audit.Record{Action: "test_action", Object: fmt.Sprint(i), Detail: map[string]any{"i": i}})
				}
			}
			if rep := verify(t, b, c); rep.BrokenSeq != 0 || rep.Entries != 8 {
				t.Fatalf("before tampering: %+v", rep)
			}
			tc.do(t, tamper(b), c)
			rep := verify(t, b, c)
			if rep.BrokenSeq != tc.want {
				t.Fatalf("after tampering: first broken seq %d (%s), want %d", rep.BrokenSeq, rep.Reason, tc.want)
			}
			if rep.Entries != tc.want-1 {
				t.Errorf("verified %d entries before the break, want %d", rep.Entries, tc.want-1)
			}
			if rep := verify(t, b, other); rep.BrokenSeq != 0 || rep.Entries != 8 {
				t.Errorf("the other community's chain: %+v", rep)
			}
			_ = ctx
		})
	}
}

func mustAppend(t *testing.T, b store.AuditLog, c tenant.CommunityID, recs ...audit.Record) {
	t.Helper()
	if err := b.AppendAudit(context.Background(), c, recs...); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
}

func verify(t *testing.T, b store.AuditLog, c tenant.CommunityID) store.AuditReport {
	t.Helper()
	rep, err := store.VerifyAudit(context.Background(), b, c)
	if err != nil {
		t.Fatalf("VerifyAudit: %v", err)
	}
	return rep
}

// AuditChain returns all of c's entries (after SyncAudit-free reading: the
// backend links pending entries itself).
func AuditChain(tb testing.TB, b store.AuditLog, c tenant.CommunityID) []audit.Entry {
	tb.Helper()
	var out []audit.Entry
	var after int64
	for {
		page, err := b.AuditEntries(context.Background(), c, after, store.MaxAuditPage)
		if err != nil {
			tb.Fatalf("AuditEntries: %v", err)
		}
		out = append(out, page...)
		if len(page) < store.MaxAuditPage {
			return out
		}
		after = page[len(page)-1].Seq
	}
}

// actions lists the actions of entries.
func actions(es []audit.Entry) []audit.Action {
	out := make([]audit.Action, len(es))
	for i, e := range es {
		out[i] = e.Action
	}
	return out
}

// checkChain fails unless es is an intact chain of community c.
func checkChain(t *testing.T, b store.AuditLog, c tenant.CommunityID) []audit.Entry {
	t.Helper()
	es := AuditChain(t, b, c)
	var v audit.Verifier
	for _, e := range es {
		if e.Community != c {
			t.Fatalf("entry %d belongs to %v, read from %v", e.Seq, e.Community, c)
		}
		if !v.Add(e) {
			seq, why := v.Broken()
			t.Fatalf("chain broken at %d: %s", seq, why)
		}
	}
	return es
}

func sameActions(got []audit.Action, want ...audit.Action) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func testAuditAppend(t *testing.T, b AuditBackend) {
	c := Community(t, b, "audit.example")
	alice := NewAuthor(t)
	if es := AuditChain(t, b, c); len(es) != 0 {
		t.Fatalf("fresh community has %d entries", len(es))
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	mustAppend(t, b, c,
		audit.Record{Action: audit.RateLimited, Actor: alice.PubKey, Detail: map[string]any{"kind": 1, "reason": "rate-limited: slow down"}, Time: at},
		audit.Record{Action: "custom_action", Object: "thing"},
	)
	mustAppend(t, b, c, audit.Record{Action: "third"})
	es := checkChain(t, b, c)
	if !sameActions(actions(es), audit.RateLimited, "custom_action", "third") {
		t.Fatalf("actions %v", actions(es))
	}
	e := es[0]
	if e.Seq != 1 || e.PrevHash != ([32]byte{}) || e.Actor != alice.PubKey || e.Object != "" || e.Version != audit.HashVersion {
		t.Errorf("first entry %+v", e)
	}
	if !e.Time.Equal(audit.Truncate(at)) || e.Time.Location() != time.UTC {
		t.Errorf("time %v, want %v in UTC", e.Time, audit.Truncate(at))
	}
	if string(e.Detail) != `{"kind":1,"reason":"rate-limited: slow down"}` {
		t.Errorf("detail %s", e.Detail)
	}
	if es[1].Actor != "" || es[1].Object != "thing" || string(es[1].Detail) != "{}" || es[1].PrevHash != e.Hash {
		t.Errorf("second entry %+v", es[1])
	}
	if rep := verify(t, b, c); rep.BrokenSeq != 0 || rep.Entries != 3 {
		t.Errorf("VerifyAudit: %+v", rep)
	}
	if err := b.SyncAudit(context.Background()); err != nil {
		t.Fatalf("SyncAudit: %v", err)
	}
	ids, err := b.AuditCommunities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, id := range ids {
		found = found || id == c
	}
	if !found {
		t.Errorf("AuditCommunities %v lacks %v", ids, c)
	}
}

func testAuditInvalid(t *testing.T, b AuditBackend) {
	c := Community(t, b, "audit.example")
	bad := []audit.Record{
		{Action: ""},
		{Action: "x", Actor: "not-a-key"},
		{Action: "x", Actor: "AB" + fmt.Sprintf("%062d", 0)},
		{Action: "x", Detail: []int{1, 2}},
		{Action: "x", Object: "nul\x00"},
	}
	for _, r := range bad {
		err := b.AppendAudit(context.Background(), c, audit.Record{Action: "fine"}, r)
		if !errors.Is(err, audit.ErrInvalidRecord) {
			t.Errorf("AppendAudit(%+v) = %v, want ErrInvalidRecord", r, err)
		}
	}
	if es := AuditChain(t, b, c); len(es) != 0 {
		t.Fatalf("invalid appends left %d entries", len(es))
	}
}

func testAuditPaging(t *testing.T, b AuditBackend) {
	c := Community(t, b, "audit.example")
	var recs []audit.Record
	for i := range 25 {
		recs = append(recs, audit.Record{Action: "n", Object: fmt.Sprint(i)})
	}
	mustAppend(t, b, c, recs...)
	var got []audit.Entry
	var after int64
	for {
		page, err := b.AuditEntries(context.Background(), c, after, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 10 {
			t.Fatalf("page of %d entries, limit 10", len(page))
		}
		got = append(got, page...)
		if len(page) < 10 {
			break
		}
		after = page[len(page)-1].Seq
	}
	if len(got) != 25 {
		t.Fatalf("paged %d entries, want 25", len(got))
	}
	for i, e := range got {
		if e.Seq != int64(i+1) || e.Object != fmt.Sprint(i) {
			t.Fatalf("entry %d: seq %d object %q", i, e.Seq, e.Object)
		}
	}
	if page, err := b.AuditEntries(context.Background(), c, 0, 0); err != nil || len(page) != 0 {
		t.Errorf("limit 0: %d entries, %v", len(page), err)
	}
}

func testAuditIsolation(t *testing.T, b AuditBackend) {
	a := Community(t, b, "a.example")
	z := Community(t, b, "z.example")
	mustAppend(t, b, a, audit.Record{Action: "in_a"})
	mustAppend(t, b, z, audit.Record{Action: "in_z"}, audit.Record{Action: "in_z"})
	mustAppend(t, b, a, audit.Record{Action: "in_a"})
	for c, want := range map[tenant.CommunityID]audit.Action{a: "in_a", z: "in_z"} {
		es := checkChain(t, b, c)
		if len(es) != 2 {
			t.Fatalf("%v: %d entries, want 2", c, len(es))
		}
		for _, e := range es {
			if e.Action != want {
				t.Errorf("%v holds %q", c, e.Action)
			}
		}
	}
	// An unknown community reads as an empty chain, like one without entries.
	if es, err := b.AuditEntries(context.Background(), tenant.NewCommunityID(), 0, 10); err != nil || len(es) != 0 {
		t.Errorf("unknown community: %d entries, %v", len(es), err)
	}
}

func testAuditChannelCommands(t *testing.T, b AuditBackend) {
	c := Community(t, b, "audit.example")
	owner, bob, carol := NewAuthor(t), NewAuthor(t), NewAuthor(t)
	ch := CreateChannel(t, b, c, owner, "general", channel.VisibilityOpen)
	MustApply(t, b, c, bob, channel.Command{Kind: nostr.KindJoinRequest, Channel: ch})
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindPutUser, Channel: ch, Target: carol.PubKey, Role: channel.RoleAdmin})
	name := "renamed"
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindEditMetadata, Channel: ch, Name: &name})
	// A refused command appends nothing.
	if _, err := Apply(t, b, c, bob, channel.Command{Kind: nostr.KindDeleteChannel, Channel: ch}); !errors.Is(err, channel.ErrNotPermitted) {
		t.Fatalf("bob deleting the channel: %v", err)
	}
	MustApply(t, b, c, carol, channel.Command{Kind: nostr.KindRemoveUser, Channel: ch, Target: bob.PubKey})
	MustApply(t, b, c, carol, channel.Command{Kind: nostr.KindLeaveRequest, Channel: ch})
	MustApply(t, b, c, owner, channel.Command{Kind: nostr.KindDeleteChannel, Channel: ch})

	es := checkChain(t, b, c)
	want := []audit.Action{audit.ChannelCreated, audit.ChannelMemberJoined, audit.ChannelMemberPut, audit.ChannelUpdated,
		audit.ChannelMemberRemoved, audit.ChannelMemberLeft, audit.ChannelDeleted}
	if !sameActions(actions(es), want...) {
		t.Fatalf("actions %v, want %v", actions(es), want)
	}
	for _, e := range es {
		if e.Object != ch.String() {
			t.Errorf("%s: object %q, want the channel", e.Action, e.Object)
		}
	}
	var d map[string]any
	if err := json.Unmarshal(es[2].Detail, &d); err != nil || d["pubkey"] != carol.PubKey || d["role"] != "admin" || es[2].Actor != owner.PubKey {
		t.Errorf("put-user entry: actor %s detail %s", es[2].Actor, es[2].Detail)
	}
	if es[4].Actor != carol.PubKey {
		t.Errorf("remove entry actor %s, want carol", es[4].Actor)
	}
}

func testAuditCommunity(t *testing.T, b AuditBackend) {
	c := Community(t, b, "audit.example")
	admin, member := NewAuthor(t), NewAuthor(t)
	ctx := audit.WithActor(context.Background(), admin.PubKey)
	if err := b.SetCommunityAccess(ctx, c, channel.AccessMembers); err != nil {
		t.Fatal(err)
	}
	if err := b.PutCommunityMember(ctx, c, member.PubKey, channel.RoleMember); err != nil {
		t.Fatal(err)
	}
	if err := b.RemoveCommunityMember(ctx, c, member.PubKey); err != nil {
		t.Fatal(err)
	}
	// Removing a non-member changes nothing and records nothing.
	if err := b.RemoveCommunityMember(ctx, c, member.PubKey); err != nil {
		t.Fatal(err)
	}
	es := checkChain(t, b, c)
	if !sameActions(actions(es), audit.CommunityPolicyChanged, audit.CommunityMemberPut, audit.CommunityMemberRemoved) {
		t.Fatalf("actions %v", actions(es))
	}
	for _, e := range es {
		if e.Actor != admin.PubKey {
			t.Errorf("%s: actor %q, want the context's", e.Action, e.Actor)
		}
	}
	if string(es[0].Detail) != `{"access":"members"}` || es[1].Object != member.PubKey {
		t.Errorf("entries %+v", es[:2])
	}
}

func testAuditDeletion(t *testing.T, b AuditBackend) {
	c := Community(t, b, "audit.example")
	alice := NewAuthor(t)
	note := alice.Event(t, 1, 100, "bye")
	MustSave(t, b, c, note)
	del := alice.Event(t, nostr.KindDeletion, 101, "", nostr.Tag{"e", note.ID}, nostr.Tag{"a", "30023:" + alice.PubKey + ":x"})
	MustSave(t, b, c, del)
	// A repeat is a duplicate: no second entry.
	if err := b.Save(context.Background(), c, del); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("repeat: %v", err)
	}
	// Plain events are not audited.
	MustSave(t, b, c, alice.Event(t, 1, 102, "hello"))
	es := checkChain(t, b, c)
	if !sameActions(actions(es), audit.EventDeletionRequested) {
		t.Fatalf("actions %v", actions(es))
	}
	e := es[0]
	want := fmt.Sprintf(`{"addresses":["30023:%s:x"],"events":["%s"]}`, alice.PubKey, note.ID)
	if e.Actor != alice.PubKey || e.Object != del.ID || string(e.Detail) != want {
		t.Errorf("entry %+v, detail want %s", e, want)
	}
}

func testAuditOperator(t *testing.T, b AuditBackend) {
	ob, ok := b.(operatorStore)
	if !ok {
		t.Skip("backend has no operator plane")
	}
	ctx := context.Background()
	op, owner, next := NewAuthor(t), NewAuthor(t), NewAuthor(t)
	octx := audit.WithActor(ctx, op.PubKey)
	com, created, err := ob.CreateCommunity(octx, store.NewCommunity{Host: "op.example", OwnerPubKey: owner.PubKey})
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	// An idempotent repeat changes nothing and records nothing.
	if _, created, err := ob.CreateCommunity(octx, store.NewCommunity{Host: "op.example", OwnerPubKey: owner.PubKey}); err != nil || created {
		t.Fatalf("repeat create: %v %v", created, err)
	}
	if _, _, err := ob.SetArchived(octx, com.ID, owner.PubKey, true, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ob.SetArchived(octx, com.ID, owner.PubKey, false, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ob.TransferCommunity(octx, com.ID.UUID(), next.PubKey, owner.PubKey, 0); err != nil {
		t.Fatal(err)
	}
	// A refused transfer records nothing.
	if _, _, _, err := ob.TransferCommunity(octx, com.ID.UUID(), owner.PubKey, op.PubKey, 0); !errors.Is(err, store.ErrOwnerConflict) {
		t.Fatalf("stale transfer: %v", err)
	}
	es := checkChain(t, b, com.ID)
	if !sameActions(actions(es), audit.CommunityProvisioned, audit.CommunityArchived, audit.CommunityUnarchived, audit.CommunityTransferred) {
		t.Fatalf("actions %v", actions(es))
	}
	for _, e := range es {
		if e.Actor != op.PubKey || e.Object != com.ID.String() {
			t.Errorf("%s: actor %q object %q", e.Action, e.Actor, e.Object)
		}
	}
	var d map[string]string
	if err := json.Unmarshal(es[3].Detail, &d); err != nil || d["previous_owner"] != owner.PubKey || d["owner"] != next.PubKey || d["host"] != "op.example" {
		t.Errorf("transfer detail %s", es[3].Detail)
	}
}

func testAuditConcurrent(t *testing.T, b AuditBackend) {
	cs := []tenant.CommunityID{Community(t, b, "one.example"), Community(t, b, "two.example")}
	const writers, each = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c := cs[(w+i)%2]
				if err := b.AppendAudit(context.Background(), c, audit.Record{Action: "w", Object: fmt.Sprintf("%d-%d", w, i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for _, c := range cs {
		es := checkChain(t, b, c)
		total += len(es)
		seen := map[string]bool{}
		for _, e := range es {
			if seen[e.Object] {
				t.Errorf("%s appended twice", e.Object)
			}
			seen[e.Object] = true
		}
	}
	if total != writers*each {
		t.Errorf("%d entries, want %d", total, writers*each)
	}
}

func testAuditCanonical(t *testing.T, b AuditBackend) {
	c := Community(t, b, "audit.example")
	detail := json.RawMessage(`{"z": [1.50, 1e2, -0, 12345678901234567890, true, null], "a": {"y": "<&> \u2028 \u0000 ü", "b": 1}}`)
	mustAppend(t, b, c, audit.Record{Action: "canon", Detail: detail})
	es := checkChain(t, b, c)
	want, err := audit.CanonicalJSON(detail)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || string(es[0].Detail) != string(want) {
		t.Fatalf("detail %s, want %s", es[0].Detail, want)
	}
}
