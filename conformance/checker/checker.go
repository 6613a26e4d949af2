// Package checker replays an isolation conformance trace (JSONL, schema
// version 2) against an independent model of the tenancy rules and reports
// what it violates.
//
// It deliberately imports nothing from buzz — not tenant, not the tracer
// that writes the traces — and treats communities as opaque labels, so that
// a bug in the relay's types or writer cannot become, mechanically, the
// same bug here. The rules, re-implemented from the specification:
//
//   - A trace is one bound connection. Its first valid step binds the
//     model to that step's resolved_community and bound_host; every later
//     step must carry the same ones (StateMismatch otherwise). The actor may
//     go once from null (unauthenticated) to a 16-hex pubkey prefix and
//     never change or go back afterwards (StateMismatch).
//   - Every step has schema_version 2, an object action of a known type
//     with exactly its fields, well-formed values, and a state_after with a
//     UUID community and a non-empty host (IllegalTransition otherwise: a
//     seam that runs unbound or writes a malformed step is itself a fault).
//   - write_insert and an auth_check with verdict "allow" must have
//     claimed_community equal to the bound community: the host wins, the
//     client's claim is never load-bearing (IllegalTransition). A "deny"
//     may name any claim, or none.
//   - Every label in row_communities of read_message_rows,
//     read_by_id_rows and read_host_feed_rows must be the bound community;
//     any other label — including an empty or malformed one — is a row of
//     another tenant reaching the client (NonInterference).
//   - sanitized_error.reason is one of restricted, invalid, server_error
//     (IllegalTransition otherwise).
//   - impl_bug is a seam that ran without emitting (CoverageBreach), as is
//     an empty trace, or a required action (see WithRequired) that never
//     appears.
package checker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// SchemaVersion is the only trace schema version the checker accepts.
const SchemaVersion = 2

// Verdict is a class of violation.
type Verdict string

// The verdicts.
const (
	IllegalTransition Verdict = "IllegalTransition"
	StateMismatch     Verdict = "StateMismatch"
	NonInterference   Verdict = "NonInterference"
	CoverageBreach    Verdict = "CoverageBreach"
)

// Action types known to the model.
const (
	ActionWriteInsert       = "write_insert"
	ActionWriteInsertGlobal = "write_insert_global"
	ActionAcceptEphemeral   = "accept_ephemeral"
	ActionWriteDuplicate    = "write_duplicate"
	ActionAuthCheck         = "auth_check"
	ActionReadMessageRows   = "read_message_rows"
	ActionReadByIDRows      = "read_by_id_rows"
	ActionReadHostFeedRows  = "read_host_feed_rows"
	ActionSanitizedError    = "sanitized_error"
	ActionImplBug           = "impl_bug"
)

// Actions returns every action type the model knows, in schema order.
func Actions() []string {
	return []string{
		ActionWriteInsert, ActionWriteInsertGlobal, ActionAcceptEphemeral, ActionWriteDuplicate,
		ActionAuthCheck, ActionReadMessageRows, ActionReadByIDRows, ActionReadHostFeedRows,
		ActionSanitizedError, ActionImplBug,
	}
}

// Violation is one finding.
type Violation struct {
	Verdict Verdict `json:"verdict"`
	Line    int     `json:"line"` // 1-based line of the step; 0 for a finding about the whole trace
	Detail  string  `json:"detail"`
}

func (v Violation) String() string {
	if v.Line == 0 {
		return fmt.Sprintf("%s: %s", v.Verdict, v.Detail)
	}
	return fmt.Sprintf("line %d: %s: %s", v.Line, v.Verdict, v.Detail)
}

// Report is the outcome of checking one trace.
type Report struct {
	Steps      int // non-blank lines read
	Violations []Violation
}

// OK reports whether the trace was accepted.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Has reports whether some violation has verdict v.
func (r Report) Has(v Verdict) bool {
	return slices.ContainsFunc(r.Violations, func(x Violation) bool { return x.Verdict == v })
}

// Verdicts returns the distinct verdicts found, in order of first
// occurrence.
func (r Report) Verdicts() []Verdict {
	var out []Verdict
	for _, v := range r.Violations {
		if !slices.Contains(out, v.Verdict) {
			out = append(out, v.Verdict)
		}
	}
	return out
}

// Checker checks traces. The zero value is not usable; call New.
type Checker struct {
	required []string
}

// Option configures a Checker.
type Option func(*Checker) error

// WithRequired makes every listed action type required: a trace in which
// one never appears is a CoverageBreach. By default no action is required
// (only a non-empty trace is).
func WithRequired(actions ...string) Option {
	return func(c *Checker) error {
		for _, a := range actions {
			if !slices.Contains(Actions(), a) {
				return fmt.Errorf("checker: unknown action %q", a)
			}
			if a == ActionImplBug {
				return errors.New("checker: impl_bug cannot be required")
			}
			if !slices.Contains(c.required, a) {
				c.required = append(c.required, a)
			}
		}
		return nil
	}
}

// New returns a Checker configured by opts.
func New(opts ...Option) (*Checker, error) {
	c := &Checker{}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("checker: nil option")
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// MaxLineBytes is the longest step line the checker reads.
const MaxLineBytes = 64 << 20

// Check reads a JSONL trace from r and checks it. The error is only for a
// failure to read r (or a line longer than MaxLineBytes); violations are in
// the Report.
func (c *Checker) Check(r io.Reader) (Report, error) {
	m := model{required: c.required, seen: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		m.step(line, b)
	}
	if err := sc.Err(); err != nil {
		return Report{}, fmt.Errorf("checker: reading trace: %w", err)
	}
	m.finish()
	return Report{Steps: m.steps, Violations: m.violations}, nil
}

// CheckBytes checks a trace held in memory.
func (c *Checker) CheckBytes(trace []byte) Report {
	rep, err := c.Check(bytes.NewReader(trace))
	if err != nil {
		return Report{Violations: []Violation{{Verdict: IllegalTransition, Detail: err.Error()}}}
	}
	return rep
}

// model is the specification's state while a trace is replayed.
type model struct {
	required   []string
	seen       map[string]bool
	steps      int
	violations []Violation

	bound     bool
	community string
	host      string
	actor     string // "" until authenticated
}

func (m *model) report(line int, v Verdict, format string, args ...any) {
	m.violations = append(m.violations, Violation{Verdict: v, Line: line, Detail: fmt.Sprintf(format, args...)})
}

// The wire shapes. Pointers tell a missing field from a zero one.
type rawStep struct {
	SchemaVersion *int            `json:"schema_version"`
	Action        json.RawMessage `json:"action"`
	StateAfter    *rawState       `json:"state_after"`
}

type rawState struct {
	ResolvedCommunity *string         `json:"resolved_community"`
	BoundHost         *string         `json:"bound_host"`
	Actor             json.RawMessage `json:"actor"`
}

type rawAction struct {
	Type             *string   `json:"type"`
	MsgID            *string   `json:"msg_id"`
	Channel          *string   `json:"channel"`
	ClaimedCommunity *string   `json:"claimed_community"`
	Verdict          *string   `json:"verdict"`
	RowCommunities   *[]string `json:"row_communities"`
	Reason           *string   `json:"reason"`
	Kind             *string   `json:"kind"`
}

// fieldsOf lists the fields (besides type) each action must have, and no
// others.
var fieldsOf = map[string][]string{
	ActionWriteInsert:       {"msg_id", "channel", "claimed_community"},
	ActionWriteInsertGlobal: {"msg_id"},
	ActionAcceptEphemeral:   {},
	ActionWriteDuplicate:    {"msg_id"},
	ActionAuthCheck:         {"channel", "claimed_community", "verdict"},
	ActionReadMessageRows:   {"channel", "row_communities"},
	ActionReadByIDRows:      {"row_communities"},
	ActionReadHostFeedRows:  {"row_communities"},
	ActionSanitizedError:    {"reason"},
	ActionImplBug:           {"kind"},
}

func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

func (m *model) step(line int, b []byte) {
	m.steps++
	var s rawStep
	if err := decodeStrict(b, &s); err != nil {
		m.report(line, IllegalTransition, "malformed step: %v", err)
		return
	}
	if s.SchemaVersion == nil || *s.SchemaVersion != SchemaVersion {
		got := "missing"
		if s.SchemaVersion != nil {
			got = fmt.Sprint(*s.SchemaVersion)
		}
		m.report(line, IllegalTransition, "schema_version %s, want %d", got, SchemaVersion)
		return
	}
	if !m.state(line, s.StateAfter) {
		return
	}
	m.action(line, s.Action)
}

// state validates state_after and compares it with the bound state. It
// returns false when the step cannot be interpreted.
func (m *model) state(line int, st *rawState) bool {
	if st == nil || st.ResolvedCommunity == nil || st.BoundHost == nil || st.Actor == nil {
		m.report(line, IllegalTransition, "state_after must have resolved_community, bound_host and actor")
		return false
	}
	if !isLabel(*st.ResolvedCommunity) {
		m.report(line, IllegalTransition, "state_after.resolved_community %q is not a community label: a seam ran unbound", *st.ResolvedCommunity)
		return false
	}
	if !isHost(*st.BoundHost) {
		m.report(line, IllegalTransition, "state_after.bound_host %q is not a host: a seam ran unbound", *st.BoundHost)
		return false
	}
	actor := ""
	if string(st.Actor) != "null" {
		if err := json.Unmarshal(st.Actor, &actor); err != nil || !isHex(actor, 16) {
			m.report(line, IllegalTransition, "state_after.actor must be null or 16 lowercase hex digits")
			return false
		}
	}
	if !m.bound {
		m.bound, m.community, m.host, m.actor = true, *st.ResolvedCommunity, *st.BoundHost, actor
		return true
	}
	if *st.ResolvedCommunity != m.community {
		m.report(line, StateMismatch, "resolved_community changed from %s to %s mid-trace", m.community, *st.ResolvedCommunity)
	}
	if *st.BoundHost != m.host {
		m.report(line, StateMismatch, "bound_host changed from %q to %q mid-trace", m.host, *st.BoundHost)
	}
	switch {
	case actor == m.actor:
	case m.actor == "":
		m.actor = actor // authenticated
	case actor == "":
		m.report(line, StateMismatch, "actor %s became unauthenticated mid-trace", m.actor)
	default:
		m.report(line, StateMismatch, "actor changed from %s to %s mid-trace", m.actor, actor)
	}
	return true
}

func (m *model) action(line int, raw json.RawMessage) {
	if len(raw) == 0 || raw[0] != '{' {
		m.report(line, IllegalTransition, "action must be an object")
		return
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(raw, &present); err != nil {
		m.report(line, IllegalTransition, "malformed action: %v", err)
		return
	}
	var a rawAction
	if err := json.Unmarshal(raw, &a); err != nil || a.Type == nil {
		m.report(line, IllegalTransition, "malformed action (or no type)")
		return
	}
	typ := *a.Type
	want, known := fieldsOf[typ]
	if !known {
		m.report(line, IllegalTransition, "unknown action %q", typ)
		return
	}
	m.seen[typ] = true
	for _, f := range want {
		if v, ok := present[f]; !ok || string(v) == "null" {
			m.report(line, IllegalTransition, "%s without %s", typ, f)
			return
		}
	}
	for f := range present {
		if f != "type" && !slices.Contains(want, f) {
			m.report(line, IllegalTransition, "%s with unexpected field %s", typ, f)
			return
		}
	}
	if a.MsgID != nil && !isHex(*a.MsgID, 16) {
		m.report(line, IllegalTransition, "%s msg_id must be 16 lowercase hex digits", typ)
		return
	}
	if a.Channel != nil && !isLabel(*a.Channel) {
		m.report(line, IllegalTransition, "%s channel %q is not a channel id", typ, *a.Channel)
		return
	}

	switch typ {
	case ActionWriteInsert:
		if *a.ClaimedCommunity != m.community {
			m.report(line, IllegalTransition, "write_insert into a channel of community %q while bound to %s", *a.ClaimedCommunity, m.community)
		}
	case ActionAuthCheck:
		switch *a.Verdict {
		case "allow":
			if *a.ClaimedCommunity != m.community {
				m.report(line, IllegalTransition, "auth_check allowed a channel of community %q while bound to %s", *a.ClaimedCommunity, m.community)
			}
		case "deny":
		default:
			m.report(line, IllegalTransition, "auth_check verdict %q is not allow or deny", *a.Verdict)
		}
	case ActionReadMessageRows, ActionReadByIDRows, ActionReadHostFeedRows:
		var foreign []string
		for _, c := range *a.RowCommunities {
			if c != m.community {
				foreign = append(foreign, fmt.Sprintf("%q", c))
			}
		}
		if len(foreign) > 0 {
			m.report(line, NonInterference, "%s returned %d row(s) labelled %s to a client bound to %s",
				typ, len(foreign), strings.Join(foreign, ", "), m.community)
		}
	case ActionSanitizedError:
		switch *a.Reason {
		case "restricted", "invalid", "server_error":
		default:
			m.report(line, IllegalTransition, "sanitized_error reason %q is outside the alphabet", *a.Reason)
		}
	case ActionImplBug:
		m.report(line, CoverageBreach, "impl_bug %q: a seam exited without emitting its step", *a.Kind)
	}
}

func (m *model) finish() {
	if m.steps == 0 {
		m.report(0, CoverageBreach, "empty trace")
		return
	}
	for _, a := range m.required {
		if !m.seen[a] {
			m.report(0, CoverageBreach, "required action %s never observed", a)
		}
	}
}

// isLabel reports whether s is a canonical lowercase 8-4-4-4-12 UUID.
func isLabel(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// isHost accepts a non-empty printable ASCII label without spaces, at most
// 255 bytes: the checker treats hosts as opaque.
func isHost(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
