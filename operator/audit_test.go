package operator_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/buzzrelay/buzz/audit"
	"github.com/buzzrelay/buzz/store"
)

// TestOperatorAPIAudited: every operator action that changes a community
// appends an entry to that community's chain, naming the operator (the
// NIP-98 signer) as actor; refused and no-op requests append nothing.
func TestOperatorAPIAudited(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(t *testing.T) backend) {
		e := newEnv(t, open(t))
		alice, bob := key(t).PublicKey(), key(t).PublicKey()
		st, body := e.api(e.op, "POST", "/operator/communities", map[string]any{"host": "audit.example", "initial_owner_pubkey": alice})
		expect(t, st, body, http.StatusCreated, "")
		com, err := e.st.CommunityByHost(context.Background(), "audit.example")
		if err != nil {
			t.Fatal(err)
		}
		id := com.ID
		st, body = e.api(e.op, "POST", "/operator/communities", map[string]any{"host": "audit.example", "initial_owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "") // existed: no entry
		st, body = e.api(e.op, "POST", "/operator/communities/archive", map[string]any{"host": "audit.example", "owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "")
		st, body = e.api(e.op, "POST", "/operator/communities/unarchive", map[string]any{"host": "audit.example", "owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "")
		st, _ = e.api(e.stranger, "POST", "/operator/communities/transfer", map[string]any{"community_id": id.String(), "new_owner_pubkey": bob, "expected_owner_pubkey": alice})
		if st != http.StatusForbidden {
			t.Fatalf("stranger transfer: %d", st)
		}
		st, body = e.api(e.op, "POST", "/operator/communities/transfer", map[string]any{"community_id": id.String(), "new_owner_pubkey": bob, "expected_owner_pubkey": alice})
		expect(t, st, body, http.StatusOK, "")

		log, ok := e.st.(store.AuditLog)
		if !ok {
			t.Fatal("backend keeps no audit log")
		}
		es, err := log.AuditEntries(context.Background(), id, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		want := []audit.Action{audit.CommunityProvisioned, audit.CommunityArchived, audit.CommunityUnarchived, audit.CommunityTransferred}
		if len(es) != len(want) {
			t.Fatalf("%d entries, want %v", len(es), want)
		}
		for i, e2 := range es {
			if e2.Action != want[i] || e2.Actor != e.op.PublicKey() || e2.Object != id.String() {
				t.Errorf("entry %d: %s by %s on %s", e2.Seq, e2.Action, e2.Actor, e2.Object)
			}
		}
		if rep, err := store.VerifyAudit(context.Background(), log, id); err != nil || rep.BrokenSeq != 0 || rep.Entries != 4 {
			t.Errorf("verify: %+v %v", rep, err)
		}
	})
}
