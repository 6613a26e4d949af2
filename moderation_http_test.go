package buzz

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/nip98"
	"github.com/buzzrelay/buzz/nostr"
)

// getAs sends GET path to the relay with Host host, signed by s for the
// URL u (http://host + path by default); s nil sends no Authorization.
func (m *modRelay) getAs(t *testing.T, host, path string, s *signer, u string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http"+strings.TrimPrefix(m.url, "ws")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if s != nil {
		if u == "" {
			u = "http://" + host + path
		}
		nonce := make([]byte, 8)
		_, _ = rand.Read(nonce)
		ev := s.event(nostr.KindHTTPAuth, now(), "", nostr.Tag{"u", u}, nostr.Tag{"method", "GET"}, nostr.Tag{"nonce", hex.EncodeToString(nonce)})
		req.Header.Set("Authorization", nip98.Scheme+" "+base64.StdEncoding.EncodeToString(ev.AppendJSON(nil)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		body = map[string]any{"raw": string(b)}
	}
	return resp.StatusCode, body
}

func TestModerationHTTPReads(t *testing.T) {
	v, err := nip98.NewVerifier()
	if err != nil {
		t.Fatal(err)
	}
	eachBackend(t, func(t *testing.T, m *modRelay) {
		const host = "modhttp.example"
		owner, mia, alice, bob, carol := newSigner(t), newSigner(t), newSigner(t), newSigner(t), newSigner(t)
		id := m.owned(t, host, owner)
		eq(t, "moderator", m.authed(t, host, owner).publish(m.cmd(owner, nostr.KindChangeCommunityRole, nostr.Tag{"p", mia.pub()}, nostr.Tag{"role", "moderator"})).OK, true)
		ac := m.authed(t, host, alice)
		rep := alice.event(nostr.KindReport, now(), "", nostr.Tag{"p", bob.pub(), "spam"})
		eq(t, "report", ac.publish(rep).OK, true)
		mc := m.authed(t, host, mia)
		eq(t, "ban", mc.publish(m.cmd(mia, nostr.KindBan, nostr.Tag{"p", bob.pub()}, nostr.Tag{"reason", "spam"})).OK, true)
		end := m.now().Add(time.Hour).Unix()
		eq(t, "timeout", mc.publish(m.cmd(mia, nostr.KindTimeout, nostr.Tag{"p", carol.pub()}, nostr.Tag{"expiration", itoa(end)})).OK, true)

		status, body := m.getAs(t, host, ModerationReportsPath, mia, "")
		eq(t, "reports status", status, http.StatusOK)
		reports := body["reports"].([]any)
		if len(reports) != 1 || reports[0].(map[string]any)["id"] != rep.ID || reports[0].(map[string]any)["status"] != "open" ||
			reports[0].(map[string]any)["event"].(map[string]any)["id"] != rep.ID {
			t.Fatalf("reports = %v", body)
		}
		if status, body = m.getAs(t, host, ModerationReportsPath+"?status=resolved", owner, ""); status != http.StatusOK || len(body["reports"].([]any)) != 0 {
			t.Fatalf("resolved reports = %d %v", status, body)
		}
		status, body = m.getAs(t, host, ModerationActionsPath+"?limit=1", mia, "")
		actions := body["actions"].([]any)
		if status != http.StatusOK || len(actions) != 1 || actions[0].(map[string]any)["action"] != "timeout" ||
			actions[0].(map[string]any)["until"] != float64(end) || body["next"] == nil {
			t.Fatalf("actions page 1 = %d %v", status, body)
		}
		status, body = m.getAs(t, host, ModerationActionsPath+"?limit=1&before="+body["next"].(string), mia, "")
		if actions = body["actions"].([]any); status != http.StatusOK || len(actions) != 1 || actions[0].(map[string]any)["action"] != "ban" ||
			actions[0].(map[string]any)["reason"] != "spam" || actions[0].(map[string]any)["actor"] != mia.pub() {
			t.Fatalf("actions page 2 = %d %v", status, body)
		}
		status, body = m.getAs(t, host, ModerationRestrictedPath, mia, "")
		restricted := body["restricted"].([]any)
		if status != http.StatusOK || len(restricted) != 2 {
			t.Fatalf("restricted = %d %v", status, body)
		}
		kinds := map[string]string{}
		for _, r := range restricted {
			kinds[r.(map[string]any)["pubkey"].(string)] = r.(map[string]any)["kind"].(string)
		}
		if kinds[bob.pub()] != "ban" || kinds[carol.pub()] != "timeout" {
			t.Fatalf("restricted kinds = %v", kinds)
		}

		// Everyone else: 403 (a member), 403 blocked (the banned), 401 (no
		// or foreign token); another community's host sees nothing of it.
		for _, p := range []string{ModerationReportsPath, ModerationActionsPath, ModerationRestrictedPath} {
			status, body = m.getAs(t, host, p, alice, "")
			eq(t, "member "+p, status, http.StatusForbidden)
			eq(t, "member message "+p, body["message"], any(msgNotModerator))
			status, body = m.getAs(t, host, p, bob, "")
			eq(t, "banned "+p, status, http.StatusForbidden)
			mustPrefix(t, "banned message "+p, body["message"].(string), "blocked:")
			status, _ = m.getAs(t, host, p, nil, "")
			eq(t, "anonymous "+p, status, http.StatusUnauthorized)
			status, _ = m.getAs(t, m.host, p, mia, "http://"+host+p)
			eq(t, "token of another host "+p, status, http.StatusUnauthorized)
			status, body = m.getAs(t, m.host, p, mia, "")
			eq(t, "moderator of another community "+p, status, http.StatusForbidden)
		}
		if status, _ = m.getAs(t, "unmapped.example", ModerationReportsPath, mia, ""); status != http.StatusNotFound {
			t.Fatalf("unmapped host: %d", status)
		}
		for _, q := range []string{"?limit=501", "?limit=0", "?status=nope", "?before=x", "?page=2", "?limit=1&limit=2"} {
			status, body = m.getAs(t, host, ModerationReportsPath+q, mia, "")
			eq(t, "bad query "+q, status, http.StatusBadRequest)
			mustPrefix(t, "bad query message "+q, body["message"].(string), "invalid:")
		}

		// An alias serves the same reads, bound to the alias host.
		if err := m.store.AddHostAlias(t.Context(), "alias.modhttp.example", id); err != nil {
			t.Fatal(err)
		}
		if status, body = m.getAs(t, "alias.modhttp.example", ModerationReportsPath, mia, ""); status != http.StatusOK || len(body["reports"].([]any)) != 1 {
			t.Fatalf("reports on the alias = %d %v", status, body)
		}
		status, _ = m.getAs(t, "alias.modhttp.example", ModerationReportsPath, mia, "http://"+host+ModerationReportsPath)
		eq(t, "primary host's token on the alias", status, http.StatusUnauthorized)
	}, WithHTTPAPI(v))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
