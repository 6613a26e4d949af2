package modhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	gonostr "github.com/nbd-wtf/go-nostr"

	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/internal/relaytest"
	"github.com/buzzrelay/buzz/modhttp"
	"github.com/buzzrelay/buzz/tenant"
)

// get sends GET path with Host host, signed by u for http://signedHost+path
// (signedHost "" = host; u nil: unsigned), and decodes the JSON answer.
func get(r *relaytest.Relay, u *relaytest.User, host, signedHost, path string) (int, map[string]any) {
	r.T.Helper()
	code, _, b := r.Do(u, http.MethodGet, host, signedHost, path, nil)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		body = map[string]any{"raw": string(b)}
	}
	return code, body
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	relaytest.Eq(t, what, got, want)
}

func TestModerationReads(t *testing.T) {
	relaytest.ForBackends(t, func(t *testing.T, st relaytest.Backend) {
		ctx := context.Background()
		r := relaytest.Serve(t, st, buzz.WithFeature(modhttp.New()))
		host := r.Host
		id, err := st.LookupHost(ctx, host)
		if err != nil {
			t.Fatal(err)
		}
		other, _, err := st.EnsureCommunity(ctx, "other.example")
		if err != nil {
			t.Fatal(err)
		}
		owner, mia, alice, bob, carol := relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser(), relaytest.NewUser()
		if err := st.PutCommunityMember(ctx, id, owner.PK, channel.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		if err := st.PutCommunityMember(ctx, other, mia.PK, channel.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		oc := r.Connect(owner, true)
		oc.Must("moderator", gonostr.Event{Kind: 9032, Tags: gonostr.Tags{{"p", mia.PK}, {"role", "moderator"}}})
		ac := r.Connect(alice, true)
		rep := gonostr.Event{Kind: 1984, CreatedAt: gonostr.Now(), Tags: gonostr.Tags{{"p", bob.PK, "spam"}}}
		if err := rep.Sign(alice.SK); err != nil {
			t.Fatal(err)
		}
		ac.Must("report", rep)
		mc := r.Connect(mia, true)
		mc.Must("ban", gonostr.Event{Kind: 9040, Tags: gonostr.Tags{{"p", bob.PK}, {"reason", "spam"}}})
		end := time.Now().Add(time.Hour).Unix()
		mc.Must("timeout", gonostr.Event{Kind: 9042, Tags: gonostr.Tags{{"p", carol.PK}, {"expiration", strconv.FormatInt(end, 10)}}})

		status, body := get(r, &mia, host, "", modhttp.ReportsPath)
		eq(t, "reports status", status, http.StatusOK)
		reports := body["reports"].([]any)
		if len(reports) != 1 || reports[0].(map[string]any)["id"] != rep.ID || reports[0].(map[string]any)["status"] != "open" ||
			reports[0].(map[string]any)["event"].(map[string]any)["id"] != rep.ID {
			t.Fatalf("reports = %v", body)
		}
		if status, body = get(r, &owner, host, "", modhttp.ReportsPath+"?status=resolved"); status != http.StatusOK || len(body["reports"].([]any)) != 0 {
			t.Fatalf("resolved reports = %d %v", status, body)
		}
		status, body = get(r, &mia, host, "", modhttp.ActionsPath+"?limit=1")
		actions := body["actions"].([]any)
		if status != http.StatusOK || len(actions) != 1 || actions[0].(map[string]any)["action"] != "timeout" ||
			actions[0].(map[string]any)["until"] != float64(end) || body["next"] == nil {
			t.Fatalf("actions page 1 = %d %v", status, body)
		}
		status, body = get(r, &mia, host, "", modhttp.ActionsPath+"?limit=1&before="+body["next"].(string))
		if actions = body["actions"].([]any); status != http.StatusOK || len(actions) != 1 || actions[0].(map[string]any)["action"] != "ban" ||
			actions[0].(map[string]any)["reason"] != "spam" || actions[0].(map[string]any)["actor"] != mia.PK {
			t.Fatalf("actions page 2 = %d %v", status, body)
		}
		status, body = get(r, &mia, host, "", modhttp.RestrictedPath)
		restricted := body["restricted"].([]any)
		if status != http.StatusOK || len(restricted) != 2 {
			t.Fatalf("restricted = %d %v", status, body)
		}
		kinds := map[string]string{}
		for _, x := range restricted {
			kinds[x.(map[string]any)["pubkey"].(string)] = x.(map[string]any)["kind"].(string)
		}
		if kinds[bob.PK] != "ban" || kinds[carol.PK] != "timeout" {
			t.Fatalf("restricted kinds = %v", kinds)
		}

		// Everyone else: 403 (a member), 403 blocked (the banned), 401 (no
		// or foreign token); another community's host sees nothing of it.
		for _, p := range []string{modhttp.ReportsPath, modhttp.ActionsPath, modhttp.RestrictedPath} {
			status, body = get(r, &alice, host, "", p)
			eq(t, "member "+p, status, http.StatusForbidden)
			eq(t, "member message "+p, body["message"], any(modhttp.MsgNotModerator))
			status, body = get(r, &bob, host, "", p)
			eq(t, "banned "+p, status, http.StatusForbidden)
			if m, _ := body["message"].(string); !strings.HasPrefix(m, "blocked:") {
				t.Fatalf("banned message %s: %v", p, body)
			}
			status, _ = get(r, nil, host, "", p)
			eq(t, "anonymous "+p, status, http.StatusUnauthorized)
			status, _ = get(r, &mia, "other.example", host, p)
			eq(t, "token of another host "+p, status, http.StatusUnauthorized)
			status, _ = get(r, &owner, "other.example", "", p)
			eq(t, "admin here, nobody there "+p, status, http.StatusForbidden)
			status, body = get(r, &mia, "other.example", "", p)
			eq(t, "moderator here, admin there: that queue "+p, status, http.StatusOK)
			for _, k := range []string{"reports", "actions", "restricted"} {
				if l, ok := body[k].([]any); ok && len(l) != 0 {
					t.Fatalf("other community's %s shows this one's: %v", k, body)
				}
			}
		}
		if status, _ = get(r, &mia, "unmapped.example", "", modhttp.ReportsPath); status != http.StatusNotFound {
			t.Fatalf("unmapped host: %d", status)
		}
		for _, q := range []string{"?limit=501", "?limit=0", "?status=nope", "?before=x", "?page=2", "?limit=1&limit=2"} {
			status, body = get(r, &mia, host, "", modhttp.ReportsPath+q)
			eq(t, "bad query "+q, status, http.StatusBadRequest)
			if m, _ := body["message"].(string); !strings.HasPrefix(m, "invalid:") {
				t.Fatalf("bad query %s: %v", q, body)
			}
		}

		// An alias serves the same reads, bound to the alias host.
		aliases, ok := st.(interface {
			AddHostAlias(ctx context.Context, host string, c tenant.CommunityID) error
		})
		if !ok {
			t.Fatal("the backend keeps no host aliases")
		}
		if err := aliases.AddHostAlias(ctx, "alias.example", id); err != nil {
			t.Fatal(err)
		}
		if status, body = get(r, &mia, "alias.example", "", modhttp.ReportsPath); status != http.StatusOK || len(body["reports"].([]any)) != 1 {
			t.Fatalf("reports on the alias = %d %v", status, body)
		}
		status, _ = get(r, &mia, "alias.example", host, modhttp.ReportsPath)
		eq(t, "primary host's token on the alias", status, http.StatusUnauthorized)
	})
}

func TestMountNeeds(t *testing.T) {
	st := relaytest.Embedded(t)
	_, err := buzz.New(buzz.WithStore(st), buzz.WithDirectory(st), buzz.WithFeature(modhttp.New()))
	if err == nil || !strings.HasPrefix(err.Error(), "modhttp: ") {
		t.Fatalf("without WithHTTPAuth: %v", err)
	}
}
