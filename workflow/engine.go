package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/cel-go/interpreter"

	"github.com/buzzrelay/buzz/channel"
	"github.com/buzzrelay/buzz/messaging"
	"github.com/buzzrelay/buzz/nostr"
	"github.com/buzzrelay/buzz/tenant"
)

const (
	// ProvenanceTag marks events the engine publishes:
	// ["buzz:workflow", workflow id, run id, step id (actions' events)].
	// Events carrying it never trigger workflows (loop guard).
	ProvenanceTag = "buzz:workflow"
)

// Engine errors (beyond the Store's).
var (
	// ErrNotPermitted: the author may not define or trigger this workflow
	// (not a channel member, or not owner/admin for a definition that
	// calls webhooks).
	ErrNotPermitted = errors.New("workflow: not permitted")
	// ErrWrongTrigger: a manual trigger for a workflow that is not
	// triggered by webhook.
	ErrWrongTrigger = errors.New("workflow: workflow is not triggered by webhook")
	// ErrDisabled: the workflow is disabled.
	ErrDisabled = errors.New("workflow: workflow is disabled")
	// ErrOwnerUnauthorized: the workflow's owner no longer holds the
	// rights to run it (see OwnerRights).
	ErrOwnerUnauthorized = errors.New("workflow: the workflow's owner may not run it")
)

// Engine runs workflows. Create it with New, start it with Run.
type Engine struct {
	store Store
	src   EventSource
	pub   Publisher
	cfg   config
	log   *slog.Logger
	reg   *Registry
	conds conditionCache
	now   func() time.Time
	stats triggerCounters

	wake chan struct{}
	sem  chan struct{}

	cacheMu sync.Mutex
	cache   map[cacheKey]cacheEntry

	heldMu sync.Mutex
	held   map[ID]*heldRun

	healthMu sync.Mutex
	loops    map[string]*LoopHealth

	runMu   sync.Mutex
	running bool
	halted  bool // test hook: stop without releasing leases (a crash)
	workers sync.WaitGroup
}

type cacheKey struct {
	c  tenant.CommunityID
	ch channel.ID
	on TriggerKind
}

type cacheEntry struct {
	wfs     []triggerable
	expires time.Time
}

// triggerable is an active workflow with its trigger filter compiled once,
// when the workflow is loaded, rather than looked up for every event.
type triggerable struct {
	Workflow
	filter    *condProgram // nil when the trigger has no filter
	filterErr error        // the filter does not compile: never matches
}

type heldRun struct {
	lease  Lease
	cancel context.CancelFunc
}

// New builds an engine from its store, event source and publisher. The
// options are validated; WithAuthority is required.
func New(st Store, src EventSource, pub Publisher, opts ...Option) (*Engine, error) {
	if st == nil || src == nil || pub == nil {
		return nil, errors.New("workflow: New needs a store, an event source and a publisher")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.authority == nil {
		return nil, errors.New("workflow: WithAuthority is required")
	}
	if cfg.heartbeat == 0 {
		cfg.heartbeat = cfg.leaseTTL / 3
	}
	cfg.approvals, _ = st.(ApprovalStore)
	if cfg.rights == nil {
		if r, ok := pub.(OwnerRights); ok {
			cfg.rights = r
		} else {
			cfg.rights = authorityRights{cfg.authority}
		}
	}
	reg, err := NewRegistry(builtinActions(&cfg)...)
	if err != nil {
		return nil, err
	}
	for _, a := range cfg.actions {
		if err := reg.add(a); err != nil {
			return nil, err
		}
	}
	e := &Engine{
		store: st, src: src, pub: pub, cfg: cfg, log: cfg.logger, reg: reg,
		now:   time.Now,
		wake:  make(chan struct{}, 1),
		sem:   make(chan struct{}, cfg.concurrency),
		cache: make(map[cacheKey]cacheEntry),
		held:  make(map[ID]*heldRun),
		loops: make(map[string]*LoopHealth),
	}
	for _, n := range loopNames {
		e.loops[n] = &LoopHealth{Name: n}
	}
	return e, nil
}

// Actions returns the engine's action registry (built-ins and WithAction).
func (e *Engine) Actions() *Registry { return e.reg }

// WorkerName is the name this engine holds leases under.
func (e *Engine) WorkerName() string { return e.cfg.worker }

// Parse parses and validates a YAML definition against the engine's
// actions. Errors are *FieldError.
// A schedule interval must be at least MinScheduleInterval (or what
// WithMinScheduleInterval set).
func (e *Engine) Parse(src []byte) (*Definition, error) {
	return parseYAML(src, e.reg, e.cfg.minInterval)
}

// DefineRequest is a definition published by an author (kind 30620).
type DefineRequest struct {
	ID               ID
	Channel          channel.ID
	Author           string // 64 hex
	YAML             []byte
	EventID          string // the 30620 event id, "" if none
	ExpectedRevision string // "" = no compare-and-swap
}

// Define parses a definition, checks that its author holds now every
// right its steps need (OwnerRights: a channel member; owner or admin when
// it calls webhooks or sets the topic) and stores it. Errors:
// *FieldError (invalid definition), ErrNotPermitted, ErrNotOwner,
// ErrRevisionConflict, ErrNotFound (expected revision of a workflow that
// does not exist), or a storage error.
func (e *Engine) Define(ctx context.Context, c tenant.CommunityID, r DefineRequest) (Workflow, error) {
	d, err := e.Parse(r.YAML)
	if err != nil {
		return Workflow{}, err
	}
	if err := e.mayDefine(ctx, c, r.Channel, r.Author, d); err != nil {
		return Workflow{}, err
	}
	wf, err := e.store.PutWorkflow(ctx, c, PutWorkflow{
		ID: r.ID, Channel: r.Channel, Owner: r.Author, Definition: d,
		EventID: r.EventID, ExpectedRevision: r.ExpectedRevision,
	})
	if err != nil {
		return Workflow{}, err
	}
	e.Invalidate(c, r.Channel)
	return wf, nil
}

// mayDefine checks that author holds every right d's steps need in ch
// (RightRun for a definition without steps): ErrNotPermitted, wrapped with
// the refusal, when not.
func (e *Engine) mayDefine(ctx context.Context, c tenant.CommunityID, ch channel.ID, author string, d *Definition) error {
	rights := map[Right]bool{RightRun: true}
	for i := range d.Steps {
		if a, ok := e.reg.Lookup(d.Steps[i].Action); ok {
			rights[neededRight(a)] = true
		}
	}
	for _, r := range []Right{RightRun, RightPost, RightDM, RightMetadata, RightAdmin} {
		if !rights[r] {
			continue
		}
		refusal, err := e.cfg.rights.OwnerMay(ctx, c, ch, author, r)
		if err != nil {
			return err
		}
		if refusal != "" {
			return fmt.Errorf("%w: %s", ErrNotPermitted, refusal)
		}
	}
	return nil
}

// authorize checks pubkey's standing in channel.
func (e *Engine) authorize(ctx context.Context, c tenant.CommunityID, ch channel.ID, pubkey string, admin bool) error {
	role, ok, err := e.cfg.authority.ChannelRole(ctx, c, ch, pubkey)
	if err != nil {
		return err
	}
	if !ok || admin && role != channel.RoleOwner && role != channel.RoleAdmin {
		return ErrNotPermitted
	}
	return nil
}

// ownerMay checks that wf's owner holds right in channel ch now (see
// OwnerRights): nil, a *StepError with CodeOwnerUnauthorized saying why
// not, or the error that kept it from being decided.
func (e *Engine) ownerMay(ctx context.Context, c tenant.CommunityID, ch channel.ID, owner string, right Right) error {
	refusal, err := e.cfg.rights.OwnerMay(ctx, c, ch, owner, right)
	if err != nil {
		return fmt.Errorf("workflow: owner rights: %w", err)
	}
	if refusal != "" {
		return &StepError{Code: CodeOwnerUnauthorized, Msg: refusal}
	}
	return nil
}

// authorityRights is the OwnerRights of an engine given none: the channel
// role its Authority reports, nothing else.
type authorityRights struct{ a Authority }

func (r authorityRights) OwnerMay(ctx context.Context, c tenant.CommunityID, ch channel.ID, owner string, right Right) (string, error) {
	role, ok, err := r.a.ChannelRole(ctx, c, ch, owner)
	if err != nil {
		return "", err
	}
	if !ok {
		return "the workflow's owner is not a member of the channel", nil
	}
	switch right {
	case RightPost:
		if role == channel.RoleGuest {
			return "the workflow's owner may not post in the channel", nil
		}
	case RightMetadata, RightAdmin:
		if role != channel.RoleOwner && role != channel.RoleAdmin {
			return "the workflow's owner is not an owner or admin of the channel", nil
		}
	}
	return "", nil
}

// neededRight is the right a step of action a needs (RightNeeder).
func neededRight(a Action) Right {
	if n, ok := a.(RightNeeder); ok {
		return n.NeededRight()
	}
	return RightRun
}

// Invalidate drops this engine's cached workflows of a channel (call it
// after changing a channel's workflows other than through Define; other
// engines see the change within the cache TTL).
func (e *Engine) Invalidate(c tenant.CommunityID, ch channel.ID) {
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	for k := range e.cache {
		if k.c == c && k.ch == ch {
			delete(e.cache, k)
		}
	}
}

// ManualTrigger is a by-hand run request (kind 46020).
type ManualTrigger struct {
	Workflow ID
	Channel  channel.ID
	// Revision is the event id of the workflow's current definition
	// (the 46020's e tag).
	Revision string
	Author   string
	EventID  string // the 46020's id: one run per trigger event
	Fields   map[string]any
}

// TriggerManual persists a run of a webhook-triggered workflow by hand.
// A workflow of another community or channel is ErrNotFound; a stale
// Revision ErrRevisionConflict; then ErrWrongTrigger, ErrDisabled,
// ErrNotPermitted (the author is not a channel member),
// ErrOwnerUnauthorized (the workflow's owner may not run it now, see
// OwnerRights). Repeating a trigger event returns its existing run with
// created false.
func (e *Engine) TriggerManual(ctx context.Context, c tenant.CommunityID, t ManualTrigger) (Run, bool, error) {
	wf, err := e.store.Workflow(ctx, c, t.Workflow)
	if err != nil {
		return Run{}, false, err
	}
	if wf.Channel != t.Channel {
		return Run{}, false, ErrNotFound
	}
	if wf.EventID == "" || t.Revision != wf.EventID {
		return Run{}, false, ErrRevisionConflict
	}
	if wf.Definition.Trigger.On != TriggerWebhook {
		return Run{}, false, ErrWrongTrigger
	}
	if !wf.Enabled {
		return Run{}, false, ErrDisabled
	}
	if err := e.authorize(ctx, c, wf.Channel, t.Author, false); err != nil {
		return Run{}, false, err
	}
	if err := e.ownerMay(ctx, c, wf.Channel, wf.Owner, RightRun); err != nil {
		var se *StepError
		if errors.As(err, &se) {
			return Run{}, false, ErrOwnerUnauthorized
		}
		return Run{}, false, err
	}
	vars := make(map[string]any, len(t.Fields)+3)
	for k, v := range t.Fields {
		vars[k] = v
	}
	vars["author"] = t.Author
	vars["channel_id"] = wf.Channel.String()
	vars["event_id"] = t.EventID
	run, created, err := e.store.CreateRun(ctx, c, NewRun{Workflow: wf.ID, TriggerEventID: t.EventID, Trigger: jsonValues(vars)})
	if err != nil {
		return Run{}, false, err
	}
	if created {
		e.poke()
	}
	return run, created, nil
}

// jsonValues normalises v to JSON values (as a stored run decodes them).
func jsonValues(v map[string]any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{}
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return map[string]any{}
	}
	return out
}

// poke wakes the dispatcher.
func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Loop names reported by Health.
const (
	LoopEvents    = "events"
	LoopDispatch  = "dispatch"
	LoopHeartbeat = "heartbeat"
	LoopSchedule  = "schedule"
)

var loopNames = []string{LoopEvents, LoopDispatch, LoopHeartbeat, LoopSchedule}

// LoopHealth is the state of one background loop.
type LoopHealth struct {
	Name      string
	Running   bool
	Restarts  int
	LastError string
	LastFail  time.Time
}

// Health reports the background loops and how many runs this engine holds.
type Health struct {
	Loops []LoopHealth
	Held  int
}

// Health returns a snapshot of the engine's loops.
func (e *Engine) Health() Health {
	e.healthMu.Lock()
	var h Health
	for _, n := range loopNames {
		h.Loops = append(h.Loops, *e.loops[n])
	}
	e.healthMu.Unlock()
	e.heldMu.Lock()
	h.Held = len(e.held)
	e.heldMu.Unlock()
	return h
}

// Check returns nil when every background loop is running, else an error
// naming those that are not (for a readiness probe).
func (e *Engine) Check() error {
	var errs []error
	for _, l := range e.Health().Loops {
		if !l.Running {
			msg := "not running"
			if l.LastError != "" {
				msg = "restarting after: " + l.LastError
			}
			errs = append(errs, fmt.Errorf("workflow loop %s %s", l.Name, msg))
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) setLoop(name string, running bool, err error) {
	e.healthMu.Lock()
	defer e.healthMu.Unlock()
	l := e.loops[name]
	l.Running = running
	if err != nil {
		l.Restarts++
		l.LastError = err.Error()
		l.LastFail = e.now()
	}
}

// Run starts the engine's loops and blocks until ctx ends; then it stops
// claiming, lets executing runs stop at their next step boundary (their
// leases are released so another engine continues them at once) and
// returns. Run may be called once.
func (e *Engine) Run(ctx context.Context) error {
	e.runMu.Lock()
	if e.running {
		e.runMu.Unlock()
		return errors.New("workflow: engine already running")
	}
	e.running = true
	e.runMu.Unlock()

	var wg sync.WaitGroup
	for name, fn := range map[string]func(context.Context) error{
		LoopEvents:    e.eventsLoop,
		LoopDispatch:  e.dispatchLoop,
		LoopHeartbeat: e.heartbeatLoop,
		LoopSchedule:  e.scheduleLoop,
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.supervise(ctx, name, fn)
		}()
	}
	<-ctx.Done()
	wg.Wait()
	e.workers.Wait()
	for _, n := range loopNames {
		e.setLoop(n, false, nil)
	}
	return nil
}

// supervise runs fn until ctx ends, restarting it (with backoff) when it
// returns or panics; the failure is logged and shown by Health.
func (e *Engine) supervise(ctx context.Context, name string, fn func(context.Context) error) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		e.setLoop(name, true, nil)
		start := e.now()
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
					e.log.Error("workflow: loop panicked", "loop", name, "panic", p, "stack", string(debug.Stack()))
				}
			}()
			return fn(ctx)
		}()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("loop returned")
		}
		e.setLoop(name, false, err)
		e.log.Error("workflow: loop failed; restarting", "loop", name, "err", err, "in", backoff)
		if e.now().Sub(start) > time.Minute {
			backoff = 50 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (e *Engine) eventsLoop(ctx context.Context) error {
	return e.src.Subscribe(ctx, e.HandleEvent)
}

// HandleEvent matches a stored event against the workflows of its channel
// and persists a pending run for each match. It is idempotent (one run
// per workflow and trigger event), so an event may be delivered again.
// An error means some run may not have been persisted: deliver again.
func (e *Engine) HandleEvent(ctx context.Context, c tenant.CommunityID, ev *nostr.Event) error {
	on, ok := triggerOf(ev)
	if !ok {
		return nil
	}
	ch, ok, err := channel.OfEvent(ev)
	if err != nil || !ok {
		return nil
	}
	wfs, err := e.active(ctx, c, ch, on)
	if err != nil {
		return err
	}
	if len(wfs) == 0 {
		return nil
	}
	vars := eventTrigger(ev, ch)
	// The filters of one event share one activation and one deadline
	// (conditionTimeout); each is also cost-limited.
	var act interpreter.Activation
	for i := range wfs {
		if wfs[i].filter != nil {
			if act, err = interpreter.NewActivation(scope(vars, nil)); err != nil {
				return fmt.Errorf("workflow: trigger variables: %w", err)
			}
			break
		}
	}
	fctx, cancel := context.WithTimeout(ctx, conditionTimeout)
	defer cancel()
	// The filters of one event also share one budget of cost units
	// (MaxTriggerCost): once spent, the remaining workflows are skipped.
	var spent uint64
	created := false
	for i := range wfs {
		wf := &wfs[i]
		t := wf.Definition.Trigger
		if on == TriggerReactionAdded && t.Emoji != "" && t.Emoji != ev.Content {
			continue
		}
		if wf.filterErr != nil {
			continue
		}
		if wf.filter != nil {
			if spent >= MaxTriggerCost || fctx.Err() != nil {
				skipped := e.countSkipped(wfs[i:], on, ev.Content)
				e.stats.exhausted.Add(1)
				e.stats.skipped.Add(skipped)
				e.log.Warn("workflow: trigger budget of an event spent; remaining workflows not matched",
					"community", c.String(), "channel", ch.String(), "event", ev.ID,
					"cost", spent, "skipped", skipped)
				break
			}
			match, cost, err := evalConditionIn(fctx, wf.filter, act)
			spent += cost
			e.stats.evaluations.Add(1)
			e.stats.cost.Add(cost)
			if err != nil {
				e.log.Debug("workflow: trigger filter failed", "workflow", wf.ID, "err", err)
				continue
			}
			if !match {
				continue
			}
		}
		_, made, err := e.store.CreateRun(ctx, c, NewRun{Workflow: wf.ID, TriggerEventID: ev.ID, Trigger: vars})
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("workflow: persist run: %w", err)
		}
		created = created || made
	}
	if created {
		e.poke()
	}
	return nil
}

// countSkipped counts the workflows of wfs whose filter would have been
// evaluated for an event (content is a reaction's emoji).
func (e *Engine) countSkipped(wfs []triggerable, on TriggerKind, content string) uint64 {
	var n uint64
	for i := range wfs {
		t := wfs[i].Definition.Trigger
		if wfs[i].filter == nil || wfs[i].filterErr != nil ||
			on == TriggerReactionAdded && t.Emoji != "" && t.Emoji != content {
			continue
		}
		n++
	}
	return n
}

// TriggerStats counts the work of matching events against workflows
// since the engine was created.
type TriggerStats struct {
	// Evaluations is the trigger filters evaluated.
	Evaluations uint64
	// Cost is the cost units those evaluations spent.
	Cost uint64
	// Exhausted is the events whose MaxTriggerCost budget (or shared
	// deadline) ran out before every filter was evaluated.
	Exhausted uint64
	// Skipped is the filters not evaluated because of that.
	Skipped uint64
}

type triggerCounters struct {
	evaluations, cost, exhausted, skipped atomic.Uint64
}

// TriggerStats returns the engine's trigger matching counters.
func (e *Engine) TriggerStats() TriggerStats {
	return TriggerStats{
		Evaluations: e.stats.evaluations.Load(),
		Cost:        e.stats.cost.Load(),
		Exhausted:   e.stats.exhausted.Load(),
		Skipped:     e.stats.skipped.Load(),
	}
}

// triggerOf returns the trigger an event may fire, applying the loop guard.
func triggerOf(ev *nostr.Event) (TriggerKind, bool) {
	var on TriggerKind
	switch ev.Kind {
	case nostr.KindChatMessage, messaging.KindMessage:
		on = TriggerMessagePosted
	case messaging.KindReaction:
		on = TriggerReactionAdded
	case messaging.KindDiff:
		on = TriggerDiffPosted
	default:
		// Status kinds, commands, state, gift wraps: never triggers.
		return "", false
	}
	for _, t := range ev.Tags {
		if len(t) > 0 && t[0] == ProvenanceTag {
			return "", false
		}
	}
	return on, true
}

// eventTrigger returns the trigger variables of a message or reaction.
func eventTrigger(ev *nostr.Event, ch channel.ID) map[string]any {
	v := map[string]any{
		"text":       ev.Content,
		"author":     ev.PubKey,
		"channel_id": ch.String(),
		"timestamp":  float64(ev.CreatedAt),
		"event_id":   ev.ID,
		"kind":       float64(ev.Kind),
	}
	var lastE, root, reply string
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "e" {
			lastE = t[1]
			if len(t) >= 4 && t[3] == "root" {
				root = t[1]
			}
			if len(t) >= 4 && t[3] == "reply" {
				reply = t[1]
			}
		}
	}
	if ev.Kind == messaging.KindDiff {
		for _, t := range ev.Tags {
			if len(t) >= 2 {
				switch t[0] {
				case "repo", "commit", "parent-commit", "pr":
					v[strings.ReplaceAll(t[0], "-", "_")] = t[1]
				case "branch":
					v["branch"] = t[1]
					if len(t) >= 3 {
						v["target_branch"] = t[2]
					}
				}
			}
		}
	}
	if ev.Kind == 7 {
		v["emoji"] = ev.Content
		v["text"] = ""
		v["message_id"] = lastE
		v["reaction_id"] = ev.ID
	} else {
		v["message_id"] = ev.ID
		v["root_message_id"] = root
		if reply == "" {
			reply = root
		}
		v["parent_message_id"] = reply
	}
	return v
}

// active returns the enabled workflows of a channel for a trigger kind.
func (e *Engine) active(ctx context.Context, c tenant.CommunityID, ch channel.ID, on TriggerKind) ([]triggerable, error) {
	k := cacheKey{c, ch, on}
	now := e.now()
	if e.cfg.cacheTTL > 0 {
		e.cacheMu.Lock()
		ent, ok := e.cache[k]
		e.cacheMu.Unlock()
		if ok && now.Before(ent.expires) {
			return ent.wfs, nil
		}
	}
	loaded, err := e.store.ActiveWorkflows(ctx, c, ch, on)
	if err != nil {
		return nil, err
	}
	wfs := make([]triggerable, len(loaded))
	for i, wf := range loaded {
		wfs[i].Workflow = wf
		if f := wf.Definition.Trigger.Filter; f != "" {
			wfs[i].filter, wfs[i].filterErr = e.conds.get(f)
		}
	}
	if e.cfg.cacheTTL > 0 {
		e.cacheMu.Lock()
		if len(e.cache) >= 100_000 {
			clear(e.cache)
		}
		e.cache[k] = cacheEntry{wfs: wfs, expires: now.Add(e.cfg.cacheTTL)}
		e.cacheMu.Unlock()
	}
	return wfs, nil
}

// scope builds the condition and template variables: trigger and steps as
// maps, and Buzz's flat names (trigger_X, steps_ID_output_F).
func scope(trigger map[string]any, steps map[string]any) map[string]any {
	v := make(map[string]any, len(trigger)+8)
	v["trigger"] = trigger
	if steps == nil {
		steps = map[string]any{}
	}
	v["steps"] = steps
	for k, x := range trigger {
		if isIdent(k) {
			v["trigger_"+k] = x
		}
	}
	for id, s := range steps {
		sm, _ := s.(map[string]any)
		out, _ := sm["output"].(map[string]any)
		for f, x := range out {
			if isIdent(f) {
				v["steps_"+id+"_output_"+f] = x
			}
		}
	}
	return v
}

func isIdent(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Delete removes a workflow (and its runs) on its owner's request (a NIP-09
// deletion of its 30620). ErrNotFound when there is no such workflow in
// the community; ErrNotPermitted when author is not its owner.
func (e *Engine) Delete(ctx context.Context, c tenant.CommunityID, id ID, author string) error {
	wf, err := e.store.Workflow(ctx, c, id)
	if err != nil {
		return err
	}
	if wf.Owner != author {
		return ErrNotPermitted
	}
	if err := e.store.DeleteWorkflow(ctx, c, id); err != nil {
		return err
	}
	e.Invalidate(c, wf.Channel)
	return nil
}

// SetEnabled enables or disables a workflow (callers check who may).
func (e *Engine) SetEnabled(ctx context.Context, c tenant.CommunityID, id ID, enabled bool) error {
	wf, err := e.store.Workflow(ctx, c, id)
	if err != nil {
		return err
	}
	if err := e.store.SetWorkflowEnabled(ctx, c, id, enabled); err != nil {
		return err
	}
	e.Invalidate(c, wf.Channel)
	return nil
}

// MemberRemoved disables every workflow pubkey owns in channel (call it
// when a member is removed or leaves) and returns how many were enabled.
// The per-run authority check is the backstop on other engines until
// their cache expires.
func (e *Engine) MemberRemoved(ctx context.Context, c tenant.CommunityID, ch channel.ID, pubkey string) (int64, error) {
	n, err := e.store.DisableOwnerWorkflows(ctx, c, ch, pubkey)
	if err != nil {
		return 0, err
	}
	e.Invalidate(c, ch)
	return n, nil
}
