package workflowhost

import (
	"context"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/ingest"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/store"
	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
	"github.com/buzzrelay/buzz/store/postgres/pgtest"
	"github.com/buzzrelay/buzz/workflow"
)

// The authority rule (ingest/authority.go) for the workflow commands, as an
// attacker meets it: signed commands copied from what they could read,
// re-sent over real WebSocket clients, on the default embedded engine
// (SQLite with its events in the LSM engine), on SQLite with its events in
// its tables, and on PostgreSQL.

// authBackend opens the store of one backend; a shared backend's opens
// are several processes (pods) on one database.
type authBackend struct {
	shared bool
	open   func(t testing.TB) wfBackend
}

func forAuthorityBackends(t *testing.T, fn func(t *testing.T, b authBackend)) {
	embeddedBackend := func(opts ...embedded.Option) authBackend {
		return authBackend{open: func(t testing.TB) wfBackend {
			st, err := embedded.Open(context.Background(), t.TempDir(), append(opts, embedded.WithLogger(relaytest.Quiet()))...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}}
	}
	t.Run("embedded", func(t *testing.T) { fn(t, embeddedBackend()) })
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		fn(t, authBackend{shared: true, open: func(t testing.TB) wfBackend {
			st, err := postgres.Open(context.Background(), url, postgres.WithLogger(relaytest.Quiet()), postgres.WithMaxConns(6))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}})
	})
}

// authedOn dials host and authenticates as s.
func (tr *testRelay) authedOn(t *testing.T, host string, s *signer) *rawClient {
	t.Helper()
	c := tr.dialHost(t, host)
	c.AuthAs(s, host)
	return c
}

// TestAuthorityWorkflowReplay (row 4): O's signed webhook definition,
// re-submitted by others before O (in O's community, or copied into
// another community under a channel of the same id): refused, no secret;
// O then gets the secret once. A 46020 and a 46030 re-sent by a non-author
// are refused; O's own 46020 sent twice starts one run.
func TestAuthorityWorkflowReplay(t *testing.T) {
	forAuthorityBackends(t, func(t *testing.T, b authBackend) {
		st := b.open(t)
		tr := workflowRelay(t, st, newHookServer(t))
		owner, x := newSigner(t), newSigner(t)
		oc := tr.authedOn(t, tr.Host, owner)
		ch := oc.createChannel(owner, "ops", channel.VisibilityOpen)
		id := workflow.NewID()
		def := owner.Event(nostr.KindDefinition, now(), hookYAML, nostr.Tag{"d", id.String()}, chanTag(ch))

		noSecret := func(what string, ok *nostr.OKMessage) {
			t.Helper()
			if ok.OK || strings.Contains(ok.Message, "webhook_secret") {
				t.Fatalf("%s: OK %v %q", what, ok.OK, ok.Message)
			}
		}
		noSecret("anonymous", tr.dial(t).PublishOnce(def))
		xc := tr.authedOn(t, tr.Host, x)
		noSecret("attacker", xc.PublishOnce(def))
		relaytest.Eq(t, "attacker's message", xc.PublishOnce(def).Message, ingest.MsgAuthorityNotAuthor)
		// Copied into another community where the attacker made a channel
		// with the same id.
		if _, _, err := st.EnsureCommunity(context.Background(), "b.example"); err != nil {
			t.Fatal(err)
		}
		xb := tr.authedOn(t, "b.example", x)
		xb.MustAccept(x.Event(nostr.KindCreateChannel, now(), "", chanTag(ch), nostr.Tag{"name", "ops"}))
		noSecret("copy in another community", xb.PublishOnce(def))

		// O's own submission: the secret, once.
		ok := oc.Publish(def)
		webhookSecretOf(t, ok)
		ok = oc.Publish(def)
		relaytest.Eq(t, "O's second submission", ok.Message, ingest.MsgDuplicate)

		// 46020: O's own manual trigger runs once; anyone else's copy is
		// refused.
		trig := owner.Event(nostr.KindManualTrigger, now(), `{"who":"o"}`, nostr.Tag{"d", id.String()}, nostr.Tag{"e", def.ID}, chanTag(ch))
		relaytest.Eq(t, "anonymous 46020", tr.dial(t).PublishOnce(trig).Message, ingest.MsgAuthorityAuth)
		okResponse(t, oc.Publish(trig))
		relaytest.Eq(t, "attacker's 46020", xc.PublishOnce(trig).Message, ingest.MsgAuthorityNotAuthor)
		relaytest.Eq(t, "O's 46020 again", oc.Publish(trig).Message, ingest.MsgDuplicate)
		runs, _, err := st.Runs(context.Background(), tr.tc.Community(), id, workflow.RunPage{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		relaytest.Eq(t, "runs of the workflow", len(runs), 1)

		// 46030: an approver's grant, re-sent by someone else.
		grant := owner.Event(nostr.KindApprovalGrant, now(), "", nostr.Tag{"d", strings.Repeat("ab", 32)}, chanTag(ch))
		relaytest.Eq(t, "attacker's 46030", xc.PublishOnce(grant).Message, ingest.MsgAuthorityNotAuthor)
		relaytest.Eq(t, "anonymous 46030", tr.dial(t).PublishOnce(grant).Message, ingest.MsgAuthorityAuth)
	})
}

// TestDiffPostedWorkflow: a diff_posted workflow is accepted and runs on a
// diff (40008), with the diff's tags as trigger variables.
func TestDiffPostedWorkflow(t *testing.T) {
	forBackends(t, func(t *testing.T, b store.Backend) {
		st, ok := b.(wfBackend)
		if !ok {
			t.Fatalf("%T does not implement the workflow store", b)
		}
		tr := workflowRelay(t, st, newHookServer(t))
		alice := newSigner(t)
		ac := tr.dial(t)
		ac.AuthAs(alice, tr.Host)
		ch := ac.createChannel(alice, "code", channel.VisibilityOpen)
		const yaml = "name: Diffs\ntrigger: {on: diff_posted, filter: 'trigger_repo == \"https://github.com/x/y\"'}\nsteps:\n  - id: note\n    action: send_message\n    text: \"diff {{trigger.commit}} by {{trigger.author}}\"\n"
		_, okm := ac.define(alice, workflow.NewID(), ch, yaml)
		okResponse(t, okm)
		ac.Subscribe("live", nostr.Filter{Kinds: []int{nostr.KindChatMessage}, Tags: map[string][]string{"h": {ch.String()}}})
		ac.MustAccept(alice.Event(messaging.KindDiff, now(), "--- a\n+++ b\n", chanTag(ch),
			nostr.Tag{"repo", "https://github.com/x/y"}, nostr.Tag{"commit", "abc1234"}))
		got := ac.waitFor("live", func(e *nostr.Event) bool { return e.PubKey != alice.Pub() })
		relaytest.Eq(t, "workflow message", got.Content, "diff abc1234 by "+alice.Pub())
	})
}
