package ingest

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/buzzrelay/buzz/nostr"
)

// projectFixtures is the shape of testdata/kind30621.fixtures.json.
type projectFixtures struct {
	Kind      int      `json:"kind"`
	MemberCap int      `json:"member_cap"`
	Rules     []string `json:"rules"`
	Cases     []struct {
		Name     string `json:"name"`
		Expect   string `json:"expect"`
		Rule     string `json:"rule"`
		OK       bool   `json:"ok"`
		OKPrefix string `json:"ok_prefix"`
		Message  string `json:"message"`
		Template struct {
			Kind    int        `json:"kind"`
			Content string     `json:"content"`
			Tags    nostr.Tags `json:"tags"`
		} `json:"template"`
	} `json:"cases"`
}

func loadProjectFixtures(t testing.TB) projectFixtures {
	t.Helper()
	b, err := os.ReadFile("testdata/kind30621.fixtures.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx projectFixtures
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	return fx
}

func TestProjectFixtures(t *testing.T) {
	fx := loadProjectFixtures(t)
	if fx.Kind != nostr.KindProject || fx.MemberCap != ProjectMemberCap || !slices.Equal(fx.Rules, ProjectRules[:]) {
		t.Fatalf("fixture header: kind %d cap %d rules %v", fx.Kind, fx.MemberCap, fx.Rules)
	}
	accept, reject := 0, 0
	seenRule := map[string]bool{}
	for _, c := range fx.Cases {
		ev := &nostr.Event{Kind: c.Template.Kind, Content: c.Template.Content, Tags: c.Template.Tags}
		err := validateKind(ev)
		if c.OK {
			accept++
			if c.Expect != "accept" || err != nil {
				t.Errorf("%s: expect %s, got %v", c.Name, c.Expect, err)
			}
			continue
		}
		reject++
		seenRule[c.Rule] = true
		var re *RuleError
		if !errors.As(err, &re) {
			t.Errorf("%s: want a *RuleError, got %v", c.Name, err)
			continue
		}
		if re.Rule != c.Rule || err.Error() != c.Message || c.OKPrefix != "invalid:" || c.Expect != "reject" {
			t.Errorf("%s: got rule %q message %q, want rule %q message %q", c.Name, re.Rule, err.Error(), c.Rule, c.Message)
		}
	}
	if accept < 11 || reject < 20 {
		t.Errorf("fixtures: %d accept, %d reject; want at least 11 and 20", accept, reject)
	}
	for _, r := range ProjectRules {
		if !seenRule[r] {
			t.Errorf("no reject case for rule %s", r)
		}
	}
}

// The fuzz oracle: one independent predicate per rule (regular expressions
// and counting, not the validator's code). A refusal must name the first
// rule whose predicate fails; an acceptance needs all of them to hold.
var (
	memberRE = regexp.MustCompile(`^30617:[0-9a-f]{64}:.+$`)
	metaMax  = map[string]int{"name": 256, "description": 2048, "buzz-channel": 256, "buzz-visibility": 256}
)

func projectRuleHolds(rule string, tags nostr.Tags) bool {
	var ds, as []nostr.Tag
	meta := map[string]int{}
	for _, t := range tags {
		if len(t) == 0 {
			continue
		}
		switch t[0] {
		case "d":
			ds = append(ds, t)
		case "a":
			as = append(as, t)
		}
		if _, ok := metaMax[t[0]]; ok {
			meta[t[0]]++
		}
	}
	switch rule {
	case RuleDCardinality:
		return len(ds) == 1
	case RuleDEmpty:
		return len(ds[0]) >= 2 && len(ds[0][1]) >= 1 && len(ds[0][1]) <= 1024
	case RuleMemberCap:
		return len(as) <= 64
	case RuleMemberTagArity:
		for _, a := range as {
			if len(a) != 2 && len(a) != 3 {
				return false
			}
		}
		return true
	case RuleMemberCoordinate:
		for _, a := range as {
			if !memberRE.MatchString(a[1]) {
				return false
			}
		}
		return true
	case RuleMemberDuplicate:
		set := map[string]int{}
		for _, a := range as {
			set[a[1]]++
		}
		return len(set) == len(as)
	case RuleMetadataCardinality:
		for _, n := range meta {
			if n > 1 {
				return false
			}
		}
		return true
	case RuleMetadataLength:
		for _, t := range tags {
			if len(t) >= 2 && metaMax[t[0]] > 0 && len(t[1]) > metaMax[t[0]] {
				return false
			}
		}
		return true
	}
	panic("unknown rule " + rule)
}

func FuzzValidateProject(f *testing.F) {
	for _, c := range loadProjectFixtures(f).Cases {
		b, err := json.Marshal(c.Template.Tags)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var tags nostr.Tags
		if json.Unmarshal(raw, &tags) != nil {
			return
		}
		err := ValidateProject(&nostr.Event{Kind: nostr.KindProject, Tags: tags})
		want := ""
		for _, r := range ProjectRules {
			if !projectRuleHolds(r, tags) {
				want = r
				break
			}
		}
		if err == nil {
			if want != "" {
				t.Fatalf("accepted, but rule %s fails for %s", want, raw)
			}
			return
		}
		var re *RuleError
		if !errors.As(err, &re) || re.Subject != "project" {
			t.Fatalf("not a project *RuleError: %v", err)
		}
		if re.Rule != want {
			t.Fatalf("refused by %s, want %s, for %s", re.Rule, want, raw)
		}
		if err.Error() != "invalid: project "+re.Rule+": "+re.Detail {
			t.Fatalf("message %q", err.Error())
		}
	})
}

func TestValidateRepository(t *testing.T) {
	pk := "c0ffee" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
	cases := []struct {
		name string
		tags nostr.Tags
		rule string // "" = accepted
	}{
		{"minimal", nostr.Tags{{"d", "buzz"}}, ""},
		{"full", nostr.Tags{{"d", "buzz-relay_v2.0"}, {"name", "buzz"}, {"description", "a relay"},
			{"web", "https://example.com/buzz"}, {"clone", "https://git.example.com/buzz.git", "git@example.com:buzz.git"},
			{"relays", "wss://relay.example.com"}, {"r", "0123456789abcdef0123456789abcdef01234567", "euc"},
			{"maintainers", pk}, {"t", "personal-fork"}, {"r", "anything"}}, ""},
		{"sha256 euc", nostr.Tags{{"d", "x"}, {"r", pk, "euc"}}, ""},
		{"64-byte id", nostr.Tags{{"d", string(make64('r'))}}, ""},
		{"no d", nostr.Tags{{"name", "x"}}, RuleRepoDCardinality},
		{"two d", nostr.Tags{{"d", "a"}, {"d", "b"}}, RuleRepoDCardinality},
		{"valueless d", nostr.Tags{{"d"}}, RuleRepoID},
		{"empty d", nostr.Tags{{"d", ""}}, RuleRepoID},
		{"65-byte id", nostr.Tags{{"d", string(make64('r')) + "r"}}, RuleRepoID},
		{"dot first", nostr.Tags{{"d", ".git"}}, RuleRepoID},
		{"dot dot", nostr.Tags{{"d", "a..b"}}, RuleRepoID},
		{"slash", nostr.Tags{{"d", "a/b"}}, RuleRepoID},
		{"space", nostr.Tags{{"d", "a b"}}, RuleRepoID},
		{"non-ascii", nostr.Tags{{"d", "bü"}}, RuleRepoID},
		{"two names", nostr.Tags{{"d", "x"}, {"name", "a"}, {"name", "b"}}, RuleRepoMetadataCardinality},
		{"two descriptions", nostr.Tags{{"d", "x"}, {"description", "a"}, {"description", "b"}}, RuleRepoMetadataCardinality},
		{"long name", nostr.Tags{{"d", "x"}, {"name", string(make([]byte, 257))}}, RuleRepoMetadataLength},
		{"valueless clone", nostr.Tags{{"d", "x"}, {"clone"}}, RuleRepoURL},
		{"empty web", nostr.Tags{{"d", "x"}, {"web", ""}}, RuleRepoURL},
		{"bad maintainer", nostr.Tags{{"d", "x"}, {"maintainers", "npub1xyz"}}, RuleRepoMaintainers},
		{"bad euc", nostr.Tags{{"d", "x"}, {"r", "HEAD", "euc"}}, RuleRepoEUC},
		{"two euc", nostr.Tags{{"d", "x"}, {"r", pk, "euc"}, {"r", pk, "euc"}}, RuleRepoEUC},
	}
	for _, c := range cases {
		err := validateKind(&nostr.Event{Kind: nostr.KindRepository, Tags: c.tags})
		var re *RuleError
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.rule != "" && (!errors.As(err, &re) || re.Rule != c.rule || re.Subject != "repository"):
			t.Errorf("%s: got %v, want rule %s", c.name, err, c.rule)
		}
	}
}

func make64(c byte) []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return b
}
