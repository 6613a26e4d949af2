package checker

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustNew(t *testing.T, opts ...Option) *Checker {
	t.Helper()
	c, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFixtures(t *testing.T) {
	for file, want := range map[string][]Verdict{
		"good.jsonl":                      nil,
		"bad_host_channel_mismatch.jsonl": {IllegalTransition},
		"bad_foreign_row_leak.jsonl":      {NonInterference},
		"bad_coverage_breach.jsonl":       {CoverageBreach},
		"bad_state_mismatch.jsonl":        {StateMismatch},
	} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rep, err := mustNew(t).Check(f)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Steps == 0 {
				t.Fatal("fixture is empty")
			}
			if got := rep.Verdicts(); !slices.Equal(got, want) {
				t.Fatalf("verdicts %v, want %v: %v", got, want, rep.Violations)
			}
		})
	}
}

func TestGoodFixtureCoversEveryAction(t *testing.T) {
	b, err := os.ReadFile("testdata/good.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, a := range Actions() {
		if a != ActionImplBug {
			all = append(all, a)
		}
	}
	if rep := mustNew(t, WithRequired(all...)).CheckBytes(b); !rep.OK() {
		t.Fatalf("good.jsonl misses required actions: %v", rep.Violations)
	}
}

const (
	labA = "aaaa0000-0000-0000-0000-000000000001"
	labB = "bbbb0000-0000-0000-0000-000000000002"
	chA  = "cafe0000-0000-0000-0000-000000000010"
)

func line(action string) string {
	return `{"schema_version":2,"action":` + action + `,"state_after":{"resolved_community":"` + labA + `","bound_host":"a.example","actor":null}}`
}

// TestRules exercises one rule per case on hand-written steps.
func TestRules(t *testing.T) {
	cases := []struct {
		name  string
		trace string
		want  []Verdict
	}{
		{"empty", "", []Verdict{CoverageBreach}},
		{"blank lines only", "\n  \n", []Verdict{CoverageBreach}},
		{"not json", "{", []Verdict{IllegalTransition}},
		{"array", "[]", []Verdict{IllegalTransition}},
		{"trailing data", line(`{"type":"accept_ephemeral"}`) + " {}", []Verdict{IllegalTransition}},
		{"unknown top-level field", `{"schema_version":2,"x":1,"action":{"type":"accept_ephemeral"},"state_after":{"resolved_community":"` + labA + `","bound_host":"h","actor":null}}`, []Verdict{IllegalTransition}},
		{"schema 1", strings.Replace(line(`{"type":"accept_ephemeral"}`), `"schema_version":2`, `"schema_version":1`, 1), []Verdict{IllegalTransition}},
		{"schema missing", strings.Replace(line(`{"type":"accept_ephemeral"}`), `"schema_version":2,`, ``, 1), []Verdict{IllegalTransition}},
		{"unknown action", line(`{"type":"write_upsert"}`), []Verdict{IllegalTransition}},
		{"action not object", line(`"accept_ephemeral"`), []Verdict{IllegalTransition}},
		{"action without type", line(`{"msg_id":"d34db33fcafef00d"}`), []Verdict{IllegalTransition}},
		{"missing field", line(`{"type":"write_insert","msg_id":"d34db33fcafef00d","channel":"` + chA + `"}`), []Verdict{IllegalTransition}},
		{"null field", line(`{"type":"read_by_id_rows","row_communities":null}`), []Verdict{IllegalTransition}},
		{"extra field", line(`{"type":"accept_ephemeral","channel":"` + chA + `"}`), []Verdict{IllegalTransition}},
		{"bad msg_id", line(`{"type":"write_duplicate","msg_id":"D34DB33FCAFEF00D"}`), []Verdict{IllegalTransition}},
		{"bad channel", line(`{"type":"auth_check","channel":"general","claimed_community":"` + labA + `","verdict":"allow"}`), []Verdict{IllegalTransition}},
		{"bad verdict", line(`{"type":"auth_check","channel":"` + chA + `","claimed_community":"` + labA + `","verdict":"maybe"}`), []Verdict{IllegalTransition}},
		{"allow foreign claim", line(`{"type":"auth_check","channel":"` + chA + `","claimed_community":"` + labB + `","verdict":"allow"}`), []Verdict{IllegalTransition}},
		{"allow empty claim", line(`{"type":"auth_check","channel":"` + chA + `","claimed_community":"","verdict":"allow"}`), []Verdict{IllegalTransition}},
		{"deny foreign claim", line(`{"type":"auth_check","channel":"` + chA + `","claimed_community":"` + labB + `","verdict":"deny"}`), nil},
		{"insert foreign claim", line(`{"type":"write_insert","msg_id":"d34db33fcafef00d","channel":"` + chA + `","claimed_community":"` + labB + `"}`), []Verdict{IllegalTransition}},
		{"insert own claim", line(`{"type":"write_insert","msg_id":"d34db33fcafef00d","channel":"` + chA + `","claimed_community":"` + labA + `"}`), nil},
		{"own rows", line(`{"type":"read_message_rows","channel":"` + chA + `","row_communities":["` + labA + `","` + labA + `"]}`), nil},
		{"no rows", line(`{"type":"read_host_feed_rows","row_communities":[]}`), nil},
		{"foreign row", line(`{"type":"read_host_feed_rows","row_communities":["` + labA + `","` + labB + `"]}`), []Verdict{NonInterference}},
		{"unlabelled row", line(`{"type":"read_by_id_rows","row_communities":[""]}`), []Verdict{NonInterference}},
		{"uppercase label row", line(`{"type":"read_by_id_rows","row_communities":["` + strings.ToUpper(labA) + `"]}`), []Verdict{NonInterference}},
		{"reason outside alphabet", line(`{"type":"sanitized_error","reason":"duplicate"}`), []Verdict{IllegalTransition}},
		{"impl_bug", line(`{"type":"impl_bug","kind":"unemitted:req"}`), []Verdict{CoverageBreach}},
		{"unbound community", strings.Replace(line(`{"type":"accept_ephemeral"}`), labA, "", 1), []Verdict{IllegalTransition}},
		{"unbound host", strings.Replace(line(`{"type":"accept_ephemeral"}`), `"a.example"`, `""`, 1), []Verdict{IllegalTransition}},
		{"bad actor", strings.Replace(line(`{"type":"accept_ephemeral"}`), `null`, `"xyz"`, 1), []Verdict{IllegalTransition}},
		{"missing actor", strings.Replace(line(`{"type":"accept_ephemeral"}`), `,"actor":null`, ``, 1), []Verdict{IllegalTransition}},
		{"actor set once", line(`{"type":"accept_ephemeral"}`) + "\n" + strings.Replace(line(`{"type":"accept_ephemeral"}`), `null`, `"0123456789abcdef"`, 1), nil},
		{"actor changes", strings.Replace(line(`{"type":"accept_ephemeral"}`), `null`, `"0123456789abcdef"`, 1) + "\n" + strings.Replace(line(`{"type":"accept_ephemeral"}`), `null`, `"fedcba9876543210"`, 1), []Verdict{StateMismatch}},
		{"actor drops", strings.Replace(line(`{"type":"accept_ephemeral"}`), `null`, `"0123456789abcdef"`, 1) + "\n" + line(`{"type":"accept_ephemeral"}`), []Verdict{StateMismatch}},
		{"host changes", line(`{"type":"accept_ephemeral"}`) + "\n" + strings.Replace(line(`{"type":"accept_ephemeral"}`), "a.example", "b.example", 1), []Verdict{StateMismatch}},
		{"community changes", line(`{"type":"accept_ephemeral"}`) + "\n" + strings.Replace(line(`{"type":"accept_ephemeral"}`), labA, labB, 1), []Verdict{StateMismatch}},
		{"crlf lines", line(`{"type":"accept_ephemeral"}`) + "\r\n" + line(`{"type":"accept_ephemeral"}`) + "\r\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := mustNew(t).CheckBytes([]byte(c.trace))
			if got := rep.Verdicts(); !slices.Equal(got, c.want) {
				t.Fatalf("verdicts %v, want %v: %v", got, c.want, rep.Violations)
			}
		})
	}
}

func TestRequired(t *testing.T) {
	tr := line(`{"type":"accept_ephemeral"}`)
	rep := mustNew(t, WithRequired(ActionAcceptEphemeral, ActionReadByIDRows)).CheckBytes([]byte(tr))
	if !slices.Equal(rep.Verdicts(), []Verdict{CoverageBreach}) || len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0].Detail, ActionReadByIDRows) {
		t.Fatalf("report %v", rep.Violations)
	}
	for _, bad := range [][]string{{"nope"}, {ActionImplBug}} {
		if _, err := New(WithRequired(bad...)); err == nil {
			t.Fatalf("WithRequired(%v) accepted", bad)
		}
	}
	if _, err := New(nil); err == nil {
		t.Fatal("nil option accepted")
	}
}

func TestViolationLines(t *testing.T) {
	tr := line(`{"type":"accept_ephemeral"}`) + "\n\n" + line(`{"type":"impl_bug","kind":"x"}`) + "\n"
	rep := mustNew(t).CheckBytes([]byte(tr))
	if len(rep.Violations) != 1 || rep.Violations[0].Line != 3 || rep.Steps != 2 {
		t.Fatalf("report %+v", rep)
	}
	if s := rep.Violations[0].String(); !strings.HasPrefix(s, "line 3: CoverageBreach: ") {
		t.Fatalf("String() = %q", s)
	}
}

// ---- property test: random valid traces and single mutations ----

type gState struct {
	ResolvedCommunity string  `json:"resolved_community"`
	BoundHost         string  `json:"bound_host"`
	Actor             *string `json:"actor"`
}

type gStep struct {
	SchemaVersion int            `json:"schema_version"`
	Action        map[string]any `json:"action"`
	StateAfter    gState         `json:"state_after"`
}

func randLabel(r *rand.Rand) string {
	const hexd = "0123456789abcdef"
	b := make([]byte, 36)
	for i := range b {
		switch i {
		case 8, 13, 18, 23:
			b[i] = '-'
		default:
			b[i] = hexd[r.IntN(16)]
		}
	}
	return string(b)
}

func randHex16(r *rand.Rand) string {
	const hexd = "0123456789abcdef"
	b := make([]byte, 16)
	for i := range b {
		b[i] = hexd[r.IntN(16)]
	}
	return string(b)
}

type world struct {
	community, foreign, host string
	actor                    string
	channels                 []string
}

func (w world) rows(r *rand.Rand) []string {
	rows := make([]string, r.IntN(5))
	for i := range rows {
		rows[i] = w.community
	}
	return rows
}

func (w world) randomAction(r *rand.Rand, typ string) map[string]any {
	ch := w.channels[r.IntN(len(w.channels))]
	switch typ {
	case ActionWriteInsert:
		return map[string]any{"type": typ, "msg_id": randHex16(r), "channel": ch, "claimed_community": w.community}
	case ActionWriteInsertGlobal, ActionWriteDuplicate:
		return map[string]any{"type": typ, "msg_id": randHex16(r)}
	case ActionAcceptEphemeral:
		return map[string]any{"type": typ}
	case ActionAuthCheck:
		if r.IntN(2) == 0 {
			return map[string]any{"type": typ, "channel": ch, "claimed_community": w.community, "verdict": "allow"}
		}
		claims := []string{w.community, w.foreign, ""}
		return map[string]any{"type": typ, "channel": ch, "claimed_community": claims[r.IntN(3)], "verdict": "deny"}
	case ActionReadMessageRows:
		return map[string]any{"type": typ, "channel": ch, "row_communities": w.rows(r)}
	case ActionReadByIDRows, ActionReadHostFeedRows:
		return map[string]any{"type": typ, "row_communities": w.rows(r)}
	case ActionSanitizedError:
		return map[string]any{"type": typ, "reason": []string{"restricted", "invalid", "server_error"}[r.IntN(3)]}
	}
	panic(typ)
}

var legalTypes = []string{
	ActionWriteInsert, ActionWriteInsertGlobal, ActionAcceptEphemeral, ActionWriteDuplicate,
	ActionAuthCheck, ActionReadMessageRows, ActionReadByIDRows, ActionReadHostFeedRows, ActionSanitizedError,
}

// genTrace returns a random legal trace containing at least two write_insert,
// read_message_rows and sanitized_error steps and one allowed auth_check (so
// that a mutation that breaks one step never also removes the last instance
// of a required action); the actor authenticates at a random step, or never.
func genTrace(r *rand.Rand) (world, []gStep) {
	w := world{community: randLabel(r), foreign: randLabel(r), host: fmt.Sprintf("h%d.example", r.IntN(1000)), actor: randHex16(r)}
	for range 1 + r.IntN(3) {
		w.channels = append(w.channels, randLabel(r))
	}
	var actions []map[string]any
	for range r.IntN(30) {
		actions = append(actions, w.randomAction(r, legalTypes[r.IntN(len(legalTypes))]))
	}
	for _, typ := range []string{ActionWriteInsert, ActionReadMessageRows, ActionSanitizedError, ActionWriteInsert, ActionReadMessageRows, ActionSanitizedError} {
		at := r.IntN(len(actions) + 1)
		actions = slices.Insert(actions, at, w.randomAction(r, typ))
	}
	allow := map[string]any{"type": ActionAuthCheck, "channel": w.channels[0], "claimed_community": w.community, "verdict": "allow"}
	actions = slices.Insert(actions, r.IntN(len(actions)+1), allow)
	authAt := r.IntN(len(actions) + 1) // len = never authenticates
	steps := make([]gStep, len(actions))
	for i, a := range actions {
		st := gState{ResolvedCommunity: w.community, BoundHost: w.host}
		if i >= authAt {
			act := w.actor
			st.Actor = &act
		}
		steps[i] = gStep{SchemaVersion: 2, Action: a, StateAfter: st}
	}
	return w, steps
}

func encode(t *testing.T, steps []gStep) []byte {
	t.Helper()
	var b []byte
	for _, s := range steps {
		line, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n')
	}
	return b
}

func cloneSteps(steps []gStep) []gStep {
	out := make([]gStep, len(steps))
	for i, s := range steps {
		out[i] = s
		out[i].Action = map[string]any{}
		for k, v := range s.Action {
			out[i].Action[k] = v
		}
	}
	return out
}

// indexWhere returns a random index of a step satisfying f, or -1.
func indexWhere(r *rand.Rand, steps []gStep, f func(int, gStep) bool) int {
	var idx []int
	for i, s := range steps {
		if f(i, s) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return -1
	}
	return idx[r.IntN(len(idx))]
}

func isType(s gStep, types ...string) bool { return slices.Contains(types, s.Action["type"].(string)) }

// mutation turns a legal trace into an illegal one; it returns the mutated
// bytes (or nil if it does not apply) and the single verdict expected.
type mutation struct {
	name  string
	want  Verdict
	apply func(t *testing.T, r *rand.Rand, w world, steps []gStep) []byte
}

var mutations = []mutation{
	{"write into a foreign community's channel", IllegalTransition, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := indexWhere(r, s, func(_ int, x gStep) bool { return isType(x, ActionWriteInsert) })
		s[i].Action["claimed_community"] = w.foreign
		return encode(t, s)
	}},
	{"allow by the claimed community", IllegalTransition, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := indexWhere(r, s, func(_ int, x gStep) bool { return isType(x, ActionAuthCheck) && x.Action["verdict"] == "allow" })
		s[i].Action["claimed_community"] = w.foreign
		return encode(t, s)
	}},
	{"deny turned into allow on a foreign claim", IllegalTransition, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := indexWhere(r, s, func(_ int, x gStep) bool { return isType(x, ActionAuthCheck) })
		s[i].Action["claimed_community"] = w.foreign
		s[i].Action["verdict"] = "allow"
		return encode(t, s)
	}},
	{"foreign row returned", NonInterference, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := indexWhere(r, s, func(_ int, x gStep) bool {
			return isType(x, ActionReadMessageRows, ActionReadByIDRows, ActionReadHostFeedRows)
		})
		rows := append([]string{}, s[i].Action["row_communities"].([]string)...)
		s[i].Action["row_communities"] = slices.Insert(rows, r.IntN(len(rows)+1), w.foreign)
		return encode(t, s)
	}},
	{"host changes mid-trace", StateMismatch, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := 1 + r.IntN(len(s)-1)
		s[i].StateAfter.BoundHost = "other." + w.host
		return encode(t, s)
	}},
	{"community changes mid-trace", StateMismatch, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := 1 + r.IntN(len(s)-1)
		s[i].StateAfter.ResolvedCommunity = w.foreign
		return encode(t, s)
	}},
	{"actor changes mid-trace", StateMismatch, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := indexWhere(r, s, func(i int, x gStep) bool { return i > 0 && s[i-1].StateAfter.Actor != nil })
		if i < 0 {
			return nil
		}
		other := randHex16(r)
		for other == w.actor {
			other = randHex16(r)
		}
		s[i].StateAfter.Actor = &other
		return encode(t, s)
	}},
	{"seam exits without emitting", CoverageBreach, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := r.IntN(len(s))
		bug := gStep{SchemaVersion: 2, Action: map[string]any{"type": ActionImplBug, "kind": "unemitted:req"}, StateAfter: s[i].StateAfter}
		return encode(t, slices.Insert(s, i+1, bug))
	}},
	{"required action missing", CoverageBreach, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		return encode(t, slices.DeleteFunc(s, func(x gStep) bool { return isType(x, ActionReadMessageRows) }))
	}},
	{"empty trace", CoverageBreach, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		return []byte{}
	}},
	{"unknown action", IllegalTransition, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := r.IntN(len(s))
		s[i].Action = map[string]any{"type": "write_upsert", "msg_id": randHex16(r)}
		return encode(t, s)
	}},
	{"schema version", IllegalTransition, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		s[r.IntN(len(s))].SchemaVersion = []int{0, 1, 3}[r.IntN(3)]
		return encode(t, s)
	}},
	{"error reason outside the alphabet", IllegalTransition, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := indexWhere(r, s, func(_ int, x gStep) bool { return isType(x, ActionSanitizedError) })
		s[i].Action["reason"] = "error: relation \"events\" does not exist"
		return encode(t, s)
	}},
	{"field dropped", IllegalTransition, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		i := indexWhere(r, s, func(_ int, x gStep) bool { return len(x.Action) > 1 })
		var keys []string
		for k := range s[i].Action {
			if k != "type" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		delete(s[i].Action, keys[r.IntN(len(keys))])
		return encode(t, s)
	}},
	{"garbled line", IllegalTransition, func(t *testing.T, r *rand.Rand, w world, s []gStep) []byte {
		lines := strings.SplitAfter(string(encode(t, s)), "\n")
		i := r.IntN(len(s))
		lines[i] = lines[i][:r.IntN(len(lines[i])-2)+1] + "\n"
		return []byte(strings.Join(lines, ""))
	}},
}

// TestPropertyRandomTraces generates random legal traces, which must be
// accepted, and applies every mutation to each, which must be rejected with
// exactly the mutation's verdict. BUZZ_CHECKER_SEED and BUZZ_CHECKER_ROUNDS
// (default 100) vary the run.
func TestPropertyRandomTraces(t *testing.T) {
	seed := uint64(20250601)
	if s := os.Getenv("BUZZ_CHECKER_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ck := mustNew(t, WithRequired(ActionWriteInsert, ActionReadMessageRows, ActionSanitizedError))
	rounds := 100
	if s := os.Getenv("BUZZ_CHECKER_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	applied := map[string]int{}
	for n := range rounds {
		w, steps := genTrace(r)
		good := encode(t, steps)
		if rep := ck.CheckBytes(good); !rep.OK() {
			t.Fatalf("seed %d round %d: a legal trace was rejected: %v\n%s", seed, n, rep.Violations, good)
		}
		for _, m := range mutations {
			bad := m.apply(t, r, w, cloneSteps(steps))
			if bad == nil {
				continue
			}
			applied[m.name]++
			rep := ck.CheckBytes(bad)
			if got := rep.Verdicts(); !slices.Equal(got, []Verdict{m.want}) {
				t.Fatalf("seed %d round %d, mutation %q: verdicts %v, want [%s]: %v\n%s", seed, n, m.name, got, m.want, rep.Violations, bad)
			}
		}
	}
	for _, m := range mutations {
		if applied[m.name] < rounds/4 {
			t.Errorf("mutation %q applied only %d times in %d rounds", m.name, applied[m.name], rounds)
		}
	}
}
