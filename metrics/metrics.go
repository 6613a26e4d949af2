// Package metrics is buzz's Prometheus instrumentation: a Recorder that a
// relay reports to (buzz.WithMetrics) and that registers its series on a
// prometheus.Registerer chosen by the embedder. It keeps no package-level
// state; several Recorders may live in one process on separate registries.
//
// Names follow the Prometheus conventions: counters end in _total, gauges
// never do, and units are in the name (_seconds, _bytes).
//
// Series. Fleet totals (no community label) are always exported:
//
//	buzz_build_info{version,goversion,revision}  gauge   always 1: buzz's module version, Go version, VCS revision
//	buzz_connections                             gauge   open WebSockets
//	buzz_events_received_total                   counter EVENTs ingested (WebSocket and HTTP)
//	buzz_events_stored_total                     counter events written to the store
//	buzz_events_refused_total{reason}            counter OK false, by NIP-01 prefix
//	buzz_reqs_total                              counter REQ messages
//	buzz_live_deliveries_total                   counter live events queued to subscribers
//	buzz_slow_reader_disconnects_total           counter connections cut off for not reading
//	buzz_store_duration_seconds{op}              histogram store call latency (save, query, count)
//	buzz_redis_up                                gauge   1 when Redis answers a ping (WithRedisPing)
//	buzz_http_requests_total{route,code}         counter HTTP requests by ServeMux pattern and status (InstrumentHTTP)
//	buzz_http_request_duration_seconds{route}    histogram HTTP request latency by pattern (InstrumentHTTP)
//	buzz_webhook_deliveries_total{direction,status} counter webhooks in (hook URL) and out (call_webhook), by 2xx…5xx or error
//	buzz_workflow_runs_started_total             counter workflow runs that began executing
//	buzz_workflow_runs_finished_total{outcome}   counter completed, failed, cancelled
//	buzz_workflow_step_duration_seconds{status}  histogram step durations, by completed, failed, skipped
//
// reason is one of the NIP-01 prefixes (invalid, restricted, blocked,
// rate-limited, auth-required, pow, error; anything else counts as error),
// so its cardinality is fixed.
//
// Per-community usage series carry a host label — the community's host,
// never its id (see WithHostOf) — and are controlled by the Mode
// (BUZZ_USAGE_METRICS_PER_COMMUNITY in buzzd):
//
//	buzz_community_connections{host}               gauge
//	buzz_community_events_received_total{host}     counter
//	buzz_community_events_stored_total{host}       counter
//	buzz_community_events_refused_total{host}      counter
//	buzz_community_reqs_total{host}                counter
//	buzz_community_live_deliveries_total{host}     counter
//
// "all" exports them for every community that had activity; "off" exports
// none; "top:K" exports the K busiest communities and folds every other
// one into host="_other" (OtherCommunity), so each metric has at most K+1 series.
// Busiest means the most events received since the previous ranking; ties
// go to the larger lifetime total, then the smaller community id. Ranking happens at
// scrape time once the re-rank interval (WithRerankInterval, default one
// minute) has passed since the last one; the first scrape ranks at once.
// A community's counters are its lifetime totals whether or not it is in
// the top set, and "other" never decreases: a community that leaves
// "other" for the top set leaves its past counts in "other", and one that
// joins "other" adds only what it does from then on. Every exported counter
// is therefore monotonic; the price is that, once communities have moved,
// the community series may sum to more than the fleet totals — use
// the fleet series for totals.
//
// The methods a relay calls per event (EventIngested, LiveDelivered, …)
// allocate nothing once a community has been seen; they take no lock.
//
// It depends only on tenant and the Prometheus client: it must not import the
// relay (package buzz) or a store.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/buzzrelay/buzz/tenant"
)

// Mode says which per-community series are exported.
type Mode struct {
	kind modeKind
	k    int
}

type modeKind int

const (
	modeOff modeKind = iota
	modeAll
	modeTop
)

// MaxTopK bounds K in top:K.
const MaxTopK = 1000

// Modes.
var (
	// ModeAll exports per-community series for every community.
	ModeAll = Mode{kind: modeAll}
	// ModeOff exports fleet totals only.
	ModeOff = Mode{kind: modeOff}
)

// ModeTop exports the k busiest communities and folds the rest into
// community="other"; k must be 1..MaxTopK.
func ModeTop(k int) (Mode, error) {
	if k < 1 || k > MaxTopK {
		return Mode{}, fmt.Errorf("metrics: top:K needs 1 <= K <= %d, not %d", MaxTopK, k)
	}
	return Mode{kind: modeTop, k: k}, nil
}

// ParseMode parses "all", "off" or "top:K". Anything else is an error.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "all":
		return ModeAll, nil
	case "off":
		return ModeOff, nil
	}
	if rest, ok := strings.CutPrefix(s, "top:"); ok {
		k, err := strconv.Atoi(rest)
		if err != nil || strconv.Itoa(k) != rest {
			return Mode{}, fmt.Errorf("metrics: %q: K must be a decimal integer", s)
		}
		return ModeTop(k)
	}
	return Mode{}, fmt.Errorf("metrics: unknown per-community mode %q (want all, off or top:K)", s)
}

// String returns the mode as ParseMode reads it.
func (m Mode) String() string {
	switch m.kind {
	case modeAll:
		return "all"
	case modeTop:
		return "top:" + strconv.Itoa(m.k)
	}
	return "off"
}

// OtherCommunity is the host label value of the communities folded
// together in top:K mode. No community host is spelled so (hosts never
// contain '_'), and a community seen under it would be relabelled.
const OtherCommunity = "_other"

// Store operations whose latency is observed.
const (
	OpSave  = "save"
	OpQuery = "query"
	OpCount = "count"
)

// numReasons is how many reason labels buzz_events_refused_total has.
const numReasons = 7

// reasonLabel is the reason label of index i (see reasonIndex).
func reasonLabel(i int) string {
	return [numReasons]string{"invalid", "restricted", "blocked", "rate-limited", "auth-required", "pow", "error"}[i]
}

// reasonIndex maps an OK message to its reason label's index without
// allocating; a message without a known prefix counts as "error".
func reasonIndex(msg string) int {
	prefix, _, _ := strings.Cut(msg, ":")
	switch prefix {
	case "invalid":
		return 0
	case "restricted":
		return 1
	case "blocked":
		return 2
	case "rate-limited":
		return 3
	case "auth-required":
		return 4
	case "pow":
		return 5
	}
	return numReasons - 1
}

type config struct {
	mode     Mode
	rerank   time.Duration
	redis    func(context.Context) error
	now      func() time.Time
	buckets  []float64
	pingWait time.Duration
	hostOf   func(context.Context, tenant.CommunityID) (string, error)
}

// Option configures a Recorder.
type Option func(*config) error

// WithPerCommunity sets the per-community mode (default ModeOff).
func WithPerCommunity(m Mode) Option {
	return func(c *config) error {
		if m.kind == modeTop && (m.k < 1 || m.k > MaxTopK) {
			return errors.New("metrics: WithPerCommunity: invalid top:K mode")
		}
		c.mode = m
		return nil
	}
}

// WithRerankInterval sets how often top:K is re-ranked (default one
// minute; at least one second).
func WithRerankInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second {
			return errors.New("metrics: WithRerankInterval: at least one second")
		}
		c.rerank = d
		return nil
	}
}

// WithRedisPing exports buzz_redis_up, asking ping at every scrape
// (bounded by two seconds): 1 when it returns nil, else 0.
func WithRedisPing(ping func(context.Context) error) Option {
	return func(c *config) error {
		if ping == nil {
			return errors.New("metrics: WithRedisPing: nil func")
		}
		c.redis = ping
		return nil
	}
}

// WithHostOf sets how a community's current host is looked up (a store's
// community registry). Per-community series are labelled with the host a
// community was first seen under in this process; with WithHostOf the
// labels are refreshed at a scrape once the re-rank interval has passed,
// so a community whose host changed is relabelled within about a minute.
// Lookups share the scrape's two-second budget; a failed one keeps the
// label.
func WithHostOf(lookup func(ctx context.Context, c tenant.CommunityID) (string, error)) Option {
	return func(c *config) error {
		if lookup == nil {
			return errors.New("metrics: WithHostOf: nil func")
		}
		c.hostOf = lookup
		return nil
	}
}

// WithClock sets the clock used for re-ranking (tests).
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return errors.New("metrics: WithClock: nil clock")
		}
		c.now = now
		return nil
	}
}

// Recorder receives a relay's instrumentation and exports it. It is safe
// for concurrent use.
type Recorder struct {
	cfg config

	conns        prometheus.Gauge
	received     prometheus.Counter
	stored       prometheus.Counter
	refused      [numReasons]prometheus.Counter
	reqs         prometheus.Counter
	deliveries   prometheus.Counter
	slowReaders  prometheus.Counter
	saveLatency  prometheus.Observer
	queryLatency prometheus.Observer
	countLatency prometheus.Observer

	http     httpSeries                               // InstrumentHTTP
	webhooks map[string]map[string]prometheus.Counter // direction → status class

	wfStarted  prometheus.Counter
	wfFinished map[string]prometheus.Counter  // by run status; "other" for any other
	wfSteps    map[string]prometheus.Observer // by step status; "other" for any other

	// Per-community state: an immutable map replaced on insert, so the
	// hot path reads it without locking.
	communities atomic.Pointer[map[tenant.CommunityID]*community]
	insertMu    sync.Mutex

	descs communityDescs

	rankMu    sync.Mutex // guards the ranking state below and Collect
	lastRank  time.Time
	lastHosts time.Time // last WithHostOf refresh
	ranked    bool      // a ranking (and so an "other" value) was exported
	top       map[*community]bool
	// otherOffset keeps community="other" monotonic as communities move
	// in and out of the top set (see the package documentation).
	otherOffset counts
}

// community is one community's lifetime usage.
type community struct {
	id         string                 // the community id, to tell apart two communities seen under one host
	label      atomic.Pointer[string] // the host label
	conns      atomic.Int64
	received   atomic.Uint64
	stored     atomic.Uint64
	refused    atomic.Uint64
	reqs       atomic.Uint64
	deliveries atomic.Uint64

	rankedAt int64 // received at the last ranking (under rankMu)
}

// counts is a snapshot of a community's counters.
type counts struct{ received, stored, refused, reqs, deliveries int64 }

func (c *community) snapshot() counts {
	return counts{int64(c.received.Load()), int64(c.stored.Load()), int64(c.refused.Load()), int64(c.reqs.Load()), int64(c.deliveries.Load())}
}

func (a counts) add(b counts, sign int64) counts {
	return counts{a.received + sign*b.received, a.stored + sign*b.stored, a.refused + sign*b.refused, a.reqs + sign*b.reqs, a.deliveries + sign*b.deliveries}
}

// New returns a Recorder whose series are registered on reg (which must
// not be nil). It fails if an option is invalid or registration fails
// (for example a second Recorder on the same registry).
func New(reg prometheus.Registerer, opts ...Option) (*Recorder, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil Registerer")
	}
	cfg := config{mode: ModeOff, rerank: time.Minute, now: time.Now, buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), pingWait: 2 * time.Second}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	r := &Recorder{cfg: cfg, top: map[*community]bool{}, descs: newCommunityDescs()}
	empty := map[tenant.CommunityID]*community{}
	r.communities.Store(&empty)

	r.conns = prometheus.NewGauge(prometheus.GaugeOpts{Name: "buzz_connections", Help: "Open WebSocket connections, all communities."})
	r.received = prometheus.NewCounter(prometheus.CounterOpts{Name: "buzz_events_received_total", Help: "EVENTs ingested (WebSocket and HTTP), all communities."})
	r.stored = prometheus.NewCounter(prometheus.CounterOpts{Name: "buzz_events_stored_total", Help: "Events written to the store, all communities."})
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "buzz_events_refused_total", Help: "EVENTs answered OK false, by NIP-01 reason prefix, all communities."}, []string{"reason"})
	for i := range numReasons {
		r.refused[i] = refused.WithLabelValues(reasonLabel(i))
	}
	r.reqs = prometheus.NewCounter(prometheus.CounterOpts{Name: "buzz_reqs_total", Help: "REQ messages, all communities."})
	r.deliveries = prometheus.NewCounter(prometheus.CounterOpts{Name: "buzz_live_deliveries_total", Help: "Live events queued to subscribers, all communities."})
	r.slowReaders = prometheus.NewCounter(prometheus.CounterOpts{Name: "buzz_slow_reader_disconnects_total", Help: "Connections cut off because they did not read fast enough."})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "buzz_store_duration_seconds", Help: "Latency of store calls, by operation.", Buckets: cfg.buckets}, []string{"op"})
	r.saveLatency, r.queryLatency, r.countLatency = lat.WithLabelValues(OpSave), lat.WithLabelValues(OpQuery), lat.WithLabelValues(OpCount)

	r.wfStarted = prometheus.NewCounter(prometheus.CounterOpts{Name: "buzz_workflow_runs_started_total", Help: "Workflow runs that began executing."})
	finished := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "buzz_workflow_runs_finished_total", Help: "Workflow runs that ended, by outcome (completed, failed, cancelled)."}, []string{"outcome"})
	steps := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "buzz_workflow_step_duration_seconds", Help: "Workflow step durations, by status (completed, failed, skipped).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"status"})
	r.wfFinished, r.wfSteps = map[string]prometheus.Counter{}, map[string]prometheus.Observer{}
	for _, o := range []string{"completed", "failed", "cancelled", "other"} {
		r.wfFinished[o] = finished.WithLabelValues(o)
	}
	for _, st := range []string{"completed", "failed", "skipped", "other"} {
		r.wfSteps[st] = steps.WithLabelValues(st)
	}

	r.http = newHTTPSeries()
	hooks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "buzz_webhook_deliveries_total",
		Help: "Webhook deliveries: in (POSTs to a workflow's hook URL) and out (call_webhook), by status class (2xx, 3xx, 4xx, 5xx, error: no response)."},
		[]string{"direction", "status"})
	r.webhooks = map[string]map[string]prometheus.Counter{}
	for _, d := range []string{WebhookIn, WebhookOut} {
		r.webhooks[d] = map[string]prometheus.Counter{}
		for _, st := range []string{"2xx", "3xx", "4xx", "5xx", "error"} {
			r.webhooks[d][st] = hooks.WithLabelValues(d, st)
		}
	}
	cs := []prometheus.Collector{r.conns, r.received, r.stored, refused, r.reqs, r.deliveries, r.slowReaders, lat, buildInfo(),
		r.wfStarted, finished, steps, r.http.requests, r.http.duration, hooks}
	if cfg.redis != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "buzz_redis_up", Help: "1 when Redis answered a ping at this scrape, else 0."}, r.redisUp))
	}
	if cfg.mode.kind != modeOff {
		cs = append(cs, (*communityCollector)(r))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return r, nil
}

// buildInfo is buzz_build_info: always 1, labelled with buzz's module
// version, the Go version and the VCS revision of the binary.
func buildInfo() prometheus.Collector {
	version, goVersion, revision := "unknown", runtime.Version(), "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if bi.Main.Path == modulePath {
			version = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				version = d.Version
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	if version == "" {
		version = "unknown"
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "buzz_build_info",
		Help: "Always 1; labelled with buzz's module version, the Go version and the binary's VCS revision."},
		[]string{"version", "goversion", "revision"})
	g.WithLabelValues(version, goVersion, revision).Set(1)
	return g
}

// modulePath is buzz's module, whose version buzz_build_info reports.
const modulePath = "github.com/buzzrelay/buzz"

func (r *Recorder) redisUp() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.pingWait)
	defer cancel()
	if r.cfg.redis(ctx) != nil {
		return 0
	}
	return 1
}

// Mode returns the per-community mode.
func (r *Recorder) Mode() Mode { return r.cfg.mode }

// of returns the usage record of tc's community, creating it on first
// sight (labelled with tc's host); nil when per-community series are off.
func (r *Recorder) of(tc tenant.TenantContext) *community {
	if r.cfg.mode.kind == modeOff {
		return nil
	}
	c := tc.Community()
	if s, ok := (*r.communities.Load())[c]; ok {
		return s
	}
	r.insertMu.Lock()
	defer r.insertMu.Unlock()
	cur := *r.communities.Load()
	if s, ok := cur[c]; ok {
		return s
	}
	next := make(map[tenant.CommunityID]*community, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	label := tc.Host()
	if label == "" {
		label = c.String()
	}
	s := &community{id: c.String()}
	s.label.Store(&label)
	next[c] = s
	r.communities.Store(&next)
	return s
}

// ConnOpened records a new connection to community c.
func (r *Recorder) ConnOpened(tc tenant.TenantContext) {
	r.conns.Inc()
	if s := r.of(tc); s != nil {
		s.conns.Add(1)
	}
}

// ConnClosed records that a connection to community c closed.
func (r *Recorder) ConnClosed(tc tenant.TenantContext) {
	r.conns.Dec()
	if s := r.of(tc); s != nil {
		s.conns.Add(-1)
	}
}

// EventIngested records one EVENT of community c and its outcome: whether
// it was stored, and the OK message ("" or a NIP-01 prefixed reason) when
// it was refused (ok false).
func (r *Recorder) EventIngested(tc tenant.TenantContext, ok, stored bool, msg string) {
	r.received.Inc()
	if stored {
		r.stored.Inc()
	}
	if !ok {
		r.refused[reasonIndex(msg)].Inc()
	}
	s := r.of(tc)
	if s == nil {
		return
	}
	s.received.Add(1)
	if stored {
		s.stored.Add(1)
	}
	if !ok {
		s.refused.Add(1)
	}
}

// Req records a REQ in community c.
func (r *Recorder) Req(tc tenant.TenantContext) {
	r.reqs.Inc()
	if s := r.of(tc); s != nil {
		s.reqs.Add(1)
	}
}

// LiveDelivered records a live event queued to a subscriber in community c.
func (r *Recorder) LiveDelivered(tc tenant.TenantContext) {
	r.deliveries.Inc()
	if s := r.of(tc); s != nil {
		s.deliveries.Add(1)
	}
}

// SlowReaderDisconnected records a connection of community c cut off for
// not reading.
func (r *Recorder) SlowReaderDisconnected(tenant.TenantContext) { r.slowReaders.Inc() }

// StoreLatency records how long a store call took; op is OpSave, OpQuery
// or OpCount (anything else is ignored).
func (r *Recorder) StoreLatency(op string, d time.Duration) {
	switch op {
	case OpSave:
		r.saveLatency.Observe(d.Seconds())
	case OpQuery:
		r.queryLatency.Observe(d.Seconds())
	case OpCount:
		r.countLatency.Observe(d.Seconds())
	}
}

// Webhook directions.
const (
	WebhookIn  = "in"  // a POST to a workflow's hook URL
	WebhookOut = "out" // a call_webhook request
)

// WebhookDelivered records a webhook delivery in direction WebhookIn or
// WebhookOut (anything else is ignored) and its HTTP status; a status
// outside 200-599 (0: no response) counts as error.
func (r *Recorder) WebhookDelivered(direction string, status int) {
	byStatus, ok := r.webhooks[direction]
	if !ok {
		return
	}
	class := "error"
	if status >= 200 && status < 600 {
		class = strconv.Itoa(status/100) + "xx"
	}
	byStatus[class].Inc()
}

// WorkflowRunStarted records a workflow run that began executing.
func (r *Recorder) WorkflowRunStarted() { r.wfStarted.Inc() }

// WorkflowRunFinished records a workflow run's outcome: completed, failed
// or cancelled (anything else counts as other).
func (r *Recorder) WorkflowRunFinished(status string) {
	c, ok := r.wfFinished[status]
	if !ok {
		c = r.wfFinished["other"]
	}
	c.Inc()
}

// WorkflowStepFinished records a workflow step's status (completed, failed
// or skipped; anything else counts as other) and duration.
func (r *Recorder) WorkflowStepFinished(status string, d time.Duration) {
	o, ok := r.wfSteps[status]
	if !ok {
		o = r.wfSteps["other"]
	}
	o.Observe(d.Seconds())
}

// communityCollector exports the per-community series at scrape time.
type communityCollector Recorder

// communityDescs are the per-community series.
type communityDescs struct {
	conns, received, stored, refused, reqs, deliveries *prometheus.Desc
}

func newCommunityDescs() communityDescs {
	l := []string{"host"}
	return communityDescs{
		conns:      prometheus.NewDesc("buzz_community_connections", "Open WebSocket connections of a community.", l, nil),
		received:   prometheus.NewDesc("buzz_community_events_received_total", "EVENTs ingested in a community.", l, nil),
		stored:     prometheus.NewDesc("buzz_community_events_stored_total", "Events stored in a community.", l, nil),
		refused:    prometheus.NewDesc("buzz_community_events_refused_total", "EVENTs refused (OK false) in a community.", l, nil),
		reqs:       prometheus.NewDesc("buzz_community_reqs_total", "REQ messages in a community.", l, nil),
		deliveries: prometheus.NewDesc("buzz_community_live_deliveries_total", "Live events queued to subscribers in a community.", l, nil),
	}
}

// Describe implements prometheus.Collector.
func (cc *communityCollector) Describe(ch chan<- *prometheus.Desc) {
	d := cc.descs
	for _, x := range []*prometheus.Desc{d.conns, d.received, d.stored, d.refused, d.reqs, d.deliveries} {
		ch <- x
	}
}

// Collect implements prometheus.Collector. Every community's counters are
// read once, and that one snapshot serves both the ranking and the values
// exported, so "other" stays continuous when communities move.
func (cc *communityCollector) Collect(ch chan<- prometheus.Metric) {
	r := (*Recorder)(cc)
	d := r.descs
	all := *r.communities.Load()
	r.rankMu.Lock()
	defer r.rankMu.Unlock()
	emit := func(label string, conns int64, n counts) {
		ch <- prometheus.MustNewConstMetric(d.conns, prometheus.GaugeValue, float64(conns), label)
		ch <- prometheus.MustNewConstMetric(d.received, prometheus.CounterValue, float64(n.received), label)
		ch <- prometheus.MustNewConstMetric(d.stored, prometheus.CounterValue, float64(n.stored), label)
		ch <- prometheus.MustNewConstMetric(d.refused, prometheus.CounterValue, float64(n.refused), label)
		ch <- prometheus.MustNewConstMetric(d.reqs, prometheus.CounterValue, float64(n.reqs), label)
		ch <- prometheus.MustNewConstMetric(d.deliveries, prometheus.CounterValue, float64(n.deliveries), label)
	}
	now := r.cfg.now()
	if r.cfg.hostOf != nil && (r.lastHosts.IsZero() || now.Sub(r.lastHosts) >= r.cfg.rerank) {
		r.refreshHosts(all)
		r.lastHosts = now
	}
	snap := make(map[*community]counts, len(all))
	for _, s := range all {
		snap[s] = s.snapshot()
	}
	labels := hostLabels(snap)
	if r.cfg.mode.kind == modeAll {
		for s, n := range snap {
			emit(labels[s], s.conns.Load(), n)
		}
		return
	}
	if r.lastRank.IsZero() || now.Sub(r.lastRank) >= r.cfg.rerank {
		r.rerank(snap)
		r.lastRank = now
	}
	other, otherConns := r.otherOffset, int64(0)
	for s, n := range snap {
		if r.top[s] {
			emit(labels[s], s.conns.Load(), n)
			continue
		}
		other = other.add(n, 1)
		otherConns += s.conns.Load()
	}
	emit(OtherCommunity, otherConns, other)
}

// hostLabels returns each community's host label. Two communities under
// one label (a host moved from one to the other while both are known) are
// told apart by appending the community id to the label of each.
func hostLabels(snap map[*community]counts) map[*community]string {
	out := make(map[*community]string, len(snap))
	seen := make(map[string]int, len(snap))
	for s := range snap {
		l := *s.label.Load()
		out[s] = l
		seen[l]++
	}
	for s, l := range out {
		if seen[l] > 1 || l == OtherCommunity {
			out[s] = l + " " + s.id
		}
	}
	return out
}

// refreshHosts relabels every community with its current host (WithHostOf),
// within the scrape's time budget; a community whose lookup fails keeps
// its label.
func (r *Recorder) refreshHosts(all map[tenant.CommunityID]*community) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.pingWait)
	defer cancel()
	for id, s := range all {
		if ctx.Err() != nil {
			return
		}
		h, err := r.cfg.hostOf(ctx, id)
		if err != nil || h == "" || h == *s.label.Load() {
			continue
		}
		s.label.Store(&h)
	}
}

// rerank picks the top K by events received since the last ranking,
// adjusting otherOffset by the snapshot of each community that moves in or
// out of the top set.
func (r *Recorder) rerank(snap map[*community]counts) {
	type cand struct {
		s      *community
		recent int64
		total  int64
	}
	cands := make([]cand, 0, len(snap))
	for s, n := range snap {
		cands = append(cands, cand{s, n.received - s.rankedAt, n.received})
		s.rankedAt = n.received
	}
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case a.recent != b.recent:
			return cmpDesc(a.recent, b.recent)
		case a.total != b.total:
			return cmpDesc(a.total, b.total)
		}
		return strings.Compare(a.s.id, b.s.id)
	})
	next := make(map[*community]bool, r.cfg.mode.k)
	for i := 0; i < len(cands) && i < r.cfg.mode.k; i++ {
		next[cands[i].s] = true
	}
	for _, c := range cands {
		if !r.ranked {
			break // nothing was exported yet: no value to keep continuous
		}
		was, is := r.top[c.s], next[c.s]
		switch {
		case !was && is: // leaves "other", which keeps its value
			r.otherOffset = r.otherOffset.add(snap[c.s], 1)
		case was && !is: // joins "other"
			r.otherOffset = r.otherOffset.add(snap[c.s], -1)
		}
	}
	r.top, r.ranked = next, true
}

func cmpDesc(a, b int64) int {
	if a > b {
		return -1
	}
	return 1
}
