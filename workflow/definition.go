package workflow

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Definition limits.
const (
	MaxDefinitionBytes = 64 << 10 // YAML source or canonical JSON
	MaxSteps           = 50
	MaxStepIDLen       = 64
	MaxNameLen         = 256
	MaxDescriptionLen  = 4096
	DefaultStepTimeout = 300   // seconds, as in Buzz
	MaxStepTimeout     = 86400 // seconds
	// MaxDefinitionNodes bounds the YAML nodes of a definition (every
	// scalar, mapping and sequence counts). Before parsing, the YAML
	// indicators that can open a node ("[", "{", ",", and ":", "-", "?"
	// used as indicators, also inside text) are counted against the same
	// bound, so a definition the parser is given never builds more than a
	// small multiple of it: parsing any input costs at most a few MB.
	MaxDefinitionNodes = 4096
	// MaxDefinitionDepth bounds the nesting of mappings and sequences.
	MaxDefinitionDepth = 32
)

// TriggerKind is a trigger's "on" value.
type TriggerKind string

// The trigger kinds.
const (
	TriggerMessagePosted TriggerKind = "message_posted"
	TriggerReactionAdded TriggerKind = "reaction_added"
	TriggerDiffPosted    TriggerKind = "diff_posted"
	TriggerWebhook       TriggerKind = "webhook"
	TriggerSchedule      TriggerKind = "schedule"
)

// Trigger says when a workflow runs.
type Trigger struct {
	On     TriggerKind
	Filter string // condition; "" = always
	Emoji  string // reaction_added: exact emoji, "" = any
	// Schedule is a schedule trigger's timing (zero for other kinds).
	Schedule Schedule
}

// Step is one step of a definition. Action names the action; Fields holds
// the action's own fields (everything beside the step keys), as JSON values
// (string, float64, bool, nil, []any, map[string]any).
type Step struct {
	ID          string
	Name        string
	If          string
	TimeoutSecs int // 0 = DefaultStepTimeout
	DependsOn   []string
	Action      string
	Fields      Fields
}

// Timeout returns the step's timeout in seconds, the default applied.
func (s *Step) Timeout() int {
	if s.TimeoutSecs == 0 {
		return DefaultStepTimeout
	}
	return s.TimeoutSecs
}

// Definition is a parsed, validated workflow definition.
type Definition struct {
	Name        string
	Description string
	Trigger     Trigger
	Steps       []Step
	Enabled     bool
}

// FieldError is a validation error naming the offending field, e.g.
// "steps[1].id: must be at most 64 characters of [A-Za-z0-9_]". Relays
// answer it as OK false "invalid: " + Error().
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// prefixed returns err with its field placed under prefix.
func prefixed(prefix string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		f := prefix
		if fe.Field != "" {
			f += "." + fe.Field
		}
		return &FieldError{Field: f, Msg: fe.Msg}
	}
	return &FieldError{Field: prefix, Msg: err.Error()}
}

// ActionLookup finds an action by name; a Registry is one.
type ActionLookup interface {
	Lookup(name string) (Action, bool)
}

// Parse decodes a YAML definition and validates it against the actions
// lookup knows. Every error is a *FieldError.
// A schedule interval must be at least MinScheduleInterval.
func Parse(src []byte, actions ActionLookup) (*Definition, error) {
	return parseYAML(src, actions, MinScheduleInterval)
}

func parseYAML(src []byte, actions ActionLookup, minInterval time.Duration) (*Definition, error) {
	if len(src) > MaxDefinitionBytes {
		return nil, fieldErr("", "definition is larger than %d bytes", MaxDefinitionBytes)
	}
	if !utf8.Valid(src) {
		return nil, fieldErr("", "definition is not valid UTF-8")
	}
	if n := yamlIndicators(src); n > MaxDefinitionNodes {
		return nil, fieldErr("", "definition has more than %d YAML nodes", MaxDefinitionNodes)
	}
	// Parsed into a node tree first: a yaml.Node keeps an alias as a
	// pointer to its anchor, so nothing is expanded until the tree is
	// checked (no anchors or aliases, bounded nodes and depth).
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&root); err != nil {
		return nil, fieldErr("", "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fieldErr("", "more than one YAML document")
	}
	if err := checkYAMLTree(&root); err != nil {
		return nil, err
	}
	var doc any
	if err := root.Decode(&doc); err != nil {
		return nil, fieldErr("", "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	// Normalise to JSON values, as a stored definition decodes.
	j, err := json.Marshal(jsonable(doc))
	if err != nil {
		return nil, fieldErr("", "cannot be represented as JSON: %v", err)
	}
	d, err := decode(j, actions)
	if err != nil {
		return nil, err
	}
	if err := d.checkInterval(minInterval); err != nil {
		return nil, err
	}
	return d, nil
}

// yamlIndicators counts the bytes of src that can open a YAML node: the
// flow indicators "[", "{" and ",", and ":", "-" and "?" where they can be
// indicators (followed by a blank, the end or a flow indicator; ":" also
// right after a quote or a closing bracket). Comments are skipped; text
// inside scalars is counted too, so the count is at least the number of
// separators the parser sees, and a document has at most about three
// nodes per indicator (a flow mapping's implicit null values included).
func yamlIndicators(src []byte) int {
	n := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '#':
			if i == 0 || src[i-1] == ' ' || src[i-1] == '\t' || src[i-1] == '\n' || src[i-1] == '\r' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
			}
		case '[', '{', ',':
			n++
		case ':', '-', '?':
			if i+1 == len(src) {
				n++
				continue
			}
			switch src[i+1] {
			case ' ', '\t', '\n', '\r', ',', '[', ']', '{', '}':
				n++
				continue
			}
			if c == ':' && i > 0 {
				switch src[i-1] {
				case '"', '\'', ']', '}':
					n++
				}
			}
		}
	}
	return n
}

// checkYAMLTree refuses anchors and aliases (a definition never needs them,
// and an alias is how a small document expands into a huge one), repeated
// and non-scalar mapping keys, and bounds the tree's nodes and depth. It walks at most MaxDefinitionNodes nodes,
// MaxDefinitionDepth deep.
func checkYAMLTree(root *yaml.Node) error {
	type item struct {
		n     *yaml.Node
		depth int
	}
	stack := []item{{root, 0}}
	nodes := 0
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.n == nil {
			continue
		}
		if it.n.Kind == yaml.AliasNode || it.n.Anchor != "" || it.n.Alias != nil {
			return fieldErr("", "YAML anchors and aliases are not allowed (line %d)", it.n.Line)
		}
		if nodes++; nodes > MaxDefinitionNodes {
			return fieldErr("", "definition has more than %d YAML nodes", MaxDefinitionNodes)
		}
		if it.depth > MaxDefinitionDepth {
			return fieldErr("", "definition is nested more than %d levels deep (line %d)", MaxDefinitionDepth, it.n.Line)
		}
		if it.n.Kind == yaml.MappingNode {
			if err := uniqueKeys(it.n); err != nil {
				return err
			}
		}
		for _, c := range it.n.Content {
			stack = append(stack, item{c, it.depth + 1})
		}
	}
	return nil
}

// uniqueKeys refuses a mapping with a repeated or non-scalar key, in linear
// time (the YAML decoder reports every pair of equal keys, which is
// quadratic in time and memory).
func uniqueKeys(m *yaml.Node) error {
	seen := make(map[string]bool, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind != yaml.ScalarNode {
			return fieldErr("", "mapping keys must be scalars (line %d)", k.Line)
		}
		if seen[k.Value] {
			return fieldErr("", "mapping key %q is repeated (line %d)", truncateRunes(k.Value, 64), k.Line)
		}
		seen[k.Value] = true
	}
	return nil
}

// DecodeJSON decodes a definition from its canonical JSON (as stored) and
// validates it like Parse. With a nil actions lookup neither the action
// fields nor the conditions are validated (stores decode what they stored,
// which was validated when it was put, possibly under older rules: a
// condition that no longer compiles fails when it is evaluated, and only
// its own workflow).
func DecodeJSON(src []byte, actions ActionLookup) (*Definition, error) {
	if len(src) > MaxDefinitionBytes {
		return nil, fieldErr("", "definition is larger than %d bytes", MaxDefinitionBytes)
	}
	return decode(src, actions)
}

// jsonable converts YAML-decoded values to JSON-encodable ones (maps with
// non-string keys get their keys formatted).
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = jsonable(x)
		}
		return m
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = jsonable(x)
		}
		return out
	default:
		return v
	}
}

func decode(src []byte, actions ActionLookup) (*Definition, error) {
	var top map[string]any
	if err := json.Unmarshal(src, &top); err != nil || top == nil {
		return nil, fieldErr("", "must be a mapping with name, trigger and steps")
	}
	f := Fields(top)
	if err := f.Only("name", "description", "trigger", "steps", "enabled"); err != nil {
		return nil, err
	}
	d := &Definition{Enabled: true}
	var err error
	if d.Name, err = f.String("name", true); err != nil {
		return nil, err
	}
	if strings.TrimSpace(d.Name) == "" {
		return nil, fieldErr("name", "must not be empty")
	}
	if utf8.RuneCountInString(d.Name) > MaxNameLen {
		return nil, fieldErr("name", "must be at most %d characters", MaxNameLen)
	}
	if d.Description, err = f.String("description", false); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(d.Description) > MaxDescriptionLen {
		return nil, fieldErr("description", "must be at most %d characters", MaxDescriptionLen)
	}
	if _, ok := f["enabled"]; ok {
		if d.Enabled, err = f.Bool("enabled"); err != nil {
			return nil, err
		}
	}
	tm, err := f.Map("trigger", true)
	if err != nil {
		return nil, err
	}
	stored := actions == nil
	if d.Trigger, err = parseTrigger(tm, stored); err != nil {
		return nil, prefixed("trigger", err)
	}
	raw, ok := f["steps"]
	if !ok || raw == nil {
		return nil, fieldErr("steps", "is required")
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fieldErr("steps", "must be a list")
	}
	if len(list) == 0 {
		return nil, fieldErr("steps", "must have at least one step")
	}
	if len(list) > MaxSteps {
		return nil, fieldErr("steps", "must have at most %d steps", MaxSteps)
	}
	seen := make(map[string]bool, len(list))
	for i, r := range list {
		path := fmt.Sprintf("steps[%d]", i)
		sm, ok := r.(map[string]any)
		if !ok {
			return nil, fieldErr(path, "must be a mapping")
		}
		st, err := parseStep(sm, seen, stored)
		if err != nil {
			return nil, prefixed(path, err)
		}
		d.Steps = append(d.Steps, st)
		seen[st.ID] = true
	}
	for i := range d.Steps {
		st := &d.Steps[i]
		path := fmt.Sprintf("steps[%d]", i)
		if actions == nil {
			continue
		}
		a, ok := actions.Lookup(st.Action)
		if !ok {
			return nil, fieldErr(path+".action", "unknown action %q", st.Action)
		}
		if err := a.Validate(st.Fields, d); err != nil {
			return nil, prefixed(path, err)
		}
	}
	return d, nil
}

// parseTrigger parses a trigger; stored skips compiling its filter.
func parseTrigger(f Fields, stored bool) (Trigger, error) {
	on, err := f.String("on", true)
	if err != nil {
		return Trigger{}, err
	}
	t := Trigger{On: TriggerKind(on)}
	switch t.On {
	case TriggerMessagePosted, TriggerDiffPosted, TriggerWebhook:
		allowed := []string{"on", "filter"}
		if t.On == TriggerWebhook {
			allowed = []string{"on"}
		}
		if err := f.Only(allowed...); err != nil {
			return Trigger{}, err
		}
	case TriggerReactionAdded:
		if err := f.Only("on", "filter", "emoji"); err != nil {
			return Trigger{}, err
		}
		if t.Emoji, err = f.String("emoji", false); err != nil {
			return Trigger{}, err
		}
	case TriggerSchedule:
		if t.Schedule, err = parseSchedule(f); err != nil {
			return Trigger{}, err
		}
		return t, nil
	default:
		return Trigger{}, fieldErr("on", "unknown trigger %q (want message_posted, reaction_added, diff_posted, webhook or schedule)", on)
	}
	if t.Filter, err = f.String("filter", false); err != nil {
		return Trigger{}, err
	}
	if t.Filter != "" && !stored {
		if _, err := compileCondition(t.Filter); err != nil {
			return Trigger{}, fieldErr("filter", "%v", err)
		}
	}
	return t, nil
}

var stepKeys = []string{"id", "name", "if", "timeout_secs", "depends_on", "action"}

func validStepID(id string) bool {
	if id == "" || len(id) > MaxStepIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// parseStep parses a step; stored skips compiling its condition.
func parseStep(f Fields, earlier map[string]bool, stored bool) (Step, error) {
	var (
		st  Step
		err error
	)
	if st.ID, err = f.String("id", true); err != nil {
		return st, err
	}
	if !validStepID(st.ID) {
		return st, fieldErr("id", "must be 1 to %d characters of [A-Za-z0-9_]", MaxStepIDLen)
	}
	if earlier[st.ID] {
		return st, fieldErr("id", "%q is used by an earlier step", st.ID)
	}
	if st.Name, err = f.String("name", false); err != nil {
		return st, err
	}
	if st.If, err = f.String("if", false); err != nil {
		return st, err
	}
	if st.If != "" && !stored {
		if _, err := compileCondition(st.If); err != nil {
			return st, fieldErr("if", "%v", err)
		}
	}
	if _, ok := f["timeout_secs"]; ok {
		n, err := f.Int("timeout_secs")
		if err != nil {
			return st, err
		}
		if n < 1 || n > MaxStepTimeout {
			return st, fieldErr("timeout_secs", "must be between 1 and %d", MaxStepTimeout)
		}
		st.TimeoutSecs = int(n)
	}
	if st.DependsOn, err = f.Strings("depends_on"); err != nil {
		return st, err
	}
	for i, dep := range st.DependsOn {
		if !earlier[dep] {
			return st, fieldErr(fmt.Sprintf("depends_on[%d]", i), "%q is not an earlier step", dep)
		}
	}
	if st.Action, err = f.String("action", true); err != nil {
		return st, err
	}
	st.Fields = Fields{}
	for k, v := range f {
		if !slices.Contains(stepKeys, k) {
			st.Fields[k] = v
		}
	}
	return st, nil
}

// UsesAction reports whether a step of d uses the named action.
func (d *Definition) UsesAction(name string) bool {
	for i := range d.Steps {
		if d.Steps[i].Action == name {
			return true
		}
	}
	return false
}

// NeedsAdmin reports whether the workflow's owner must be a channel owner or
// admin (it calls webhooks).
func (d *Definition) NeedsAdmin() bool { return d.UsesAction(ActionCallWebhook) }

// Step returns the step with the given id.
func (d *Definition) Step(id string) (*Step, bool) {
	for i := range d.Steps {
		if d.Steps[i].ID == id {
			return &d.Steps[i], true
		}
	}
	return nil, false
}

// CanonicalJSON returns the definition as canonical JSON: objects with
// sorted keys, no insignificant space, no HTML escaping, defaults made
// explicit ("enabled"), each step's action fields beside its step keys.
// Equal definitions have equal canonical JSON.
func (d *Definition) CanonicalJSON() []byte {
	steps := make([]any, len(d.Steps))
	for i := range d.Steps {
		st := &d.Steps[i]
		m := make(map[string]any, len(st.Fields)+6)
		maps := st.Fields
		for k, v := range maps {
			m[k] = v
		}
		m["id"] = st.ID
		m["action"] = st.Action
		if st.Name != "" {
			m["name"] = st.Name
		}
		if st.If != "" {
			m["if"] = st.If
		}
		if st.TimeoutSecs != 0 {
			m["timeout_secs"] = st.TimeoutSecs
		}
		if len(st.DependsOn) > 0 {
			m["depends_on"] = st.DependsOn
		}
		steps[i] = m
	}
	trig := map[string]any{"on": string(d.Trigger.On)}
	if d.Trigger.Filter != "" {
		trig["filter"] = d.Trigger.Filter
	}
	if d.Trigger.Emoji != "" {
		trig["emoji"] = d.Trigger.Emoji
	}
	if s := d.Trigger.Schedule; d.Trigger.On == TriggerSchedule {
		if s.Cron != "" {
			trig["cron"] = s.Cron
		} else {
			trig["interval"] = int64(s.Interval / time.Second)
		}
		if s.TimeZone != "" {
			trig["timezone"] = s.TimeZone
		}
	}
	top := map[string]any{"name": d.Name, "trigger": trig, "steps": steps, "enabled": d.Enabled}
	if d.Description != "" {
		top["description"] = d.Description
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(top); err != nil {
		// Every value came from JSON decoding: it always encodes.
		panic(fmt.Sprintf("workflow: canonical JSON: %v", err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Hash returns the SHA-256 of the canonical JSON.
func (d *Definition) Hash() [32]byte { return sha256.Sum256(d.CanonicalJSON()) }

// RevisionOf returns the revision string of a definition hash: its first
// 16 bytes in lowercase hex (32 characters), the value Buzz's
// expected-revision tag compares against.
func RevisionOf(hash [32]byte) string { return hex.EncodeToString(hash[:16]) }
