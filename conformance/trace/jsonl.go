package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/buzzrelay/buzz/tenant"
)

// JSONL is a Tracer writing one JSON line per step to an io.Writer, in the
// order the calls are made. It is safe for concurrent use. A write error is
// kept (see Err) and later steps are dropped.
type JSONL struct {
	mu  sync.Mutex
	w   io.Writer
	err error
	buf bytes.Buffer
}

var _ Tracer = (*JSONL)(nil)

// NewJSONL returns a Tracer writing to w.
func NewJSONL(w io.Writer) *JSONL { return &JSONL{w: w} }

// Err returns the first write error, if any.
func (j *JSONL) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// The wire shapes, one per action, with their fields in schema order.
type (
	step struct {
		SchemaVersion int        `json:"schema_version"`
		Action        any        `json:"action"`
		StateAfter    stateAfter `json:"state_after"`
	}
	stateAfter struct {
		ResolvedCommunity string  `json:"resolved_community"`
		BoundHost         string  `json:"bound_host"`
		Actor             *string `json:"actor"`
	}
	writeInsert struct {
		Type             string `json:"type"`
		MsgID            string `json:"msg_id"`
		Channel          string `json:"channel"`
		ClaimedCommunity string `json:"claimed_community"`
	}
	msgOnly struct {
		Type  string `json:"type"`
		MsgID string `json:"msg_id"`
	}
	typeOnly struct {
		Type string `json:"type"`
	}
	authCheck struct {
		Type             string `json:"type"`
		Channel          string `json:"channel"`
		ClaimedCommunity string `json:"claimed_community"`
		Verdict          string `json:"verdict"`
	}
	readMessageRows struct {
		Type           string   `json:"type"`
		Channel        string   `json:"channel"`
		RowCommunities []string `json:"row_communities"`
	}
	readRows struct {
		Type           string   `json:"type"`
		RowCommunities []string `json:"row_communities"`
	}
	sanitizedError struct {
		Type   string `json:"type"`
		Reason Reason `json:"reason"`
	}
	implBug struct {
		Type string `json:"type"`
		Kind string `json:"kind"`
	}
)

// label is a community's trace label: its UUID text, "" for none.
func label(c tenant.CommunityID) string {
	if c.IsZero() {
		return ""
	}
	return c.String()
}

func labels(rows []tenant.CommunityID) []string {
	out := make([]string, len(rows))
	for i, c := range rows {
		out[i] = label(c)
	}
	return out
}

// shortID is the first 16 characters of an event id or pubkey.
func shortID(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
}

func project(st State) stateAfter {
	sa := stateAfter{ResolvedCommunity: label(st.Tenant.Community()), BoundHost: st.Tenant.Host()}
	if st.Actor != "" {
		a := shortID(st.Actor)
		sa.Actor = &a
	}
	return sa
}

func (j *JSONL) emit(st State, action any) {
	line, err := json.Marshal(step{SchemaVersion: SchemaVersion, Action: action, StateAfter: project(st)})
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	if err != nil {
		j.err = err
		return
	}
	j.buf.Reset()
	j.buf.Write(line)
	j.buf.WriteByte('\n')
	if _, err := j.w.Write(j.buf.Bytes()); err != nil {
		j.err = err
	}
}

func (j *JSONL) WriteInsert(_ context.Context, st State, msgID, channel string, claimed tenant.CommunityID) {
	j.emit(st, writeInsert{ActionWriteInsert, shortID(msgID), channel, label(claimed)})
}

func (j *JSONL) WriteInsertGlobal(_ context.Context, st State, msgID string) {
	j.emit(st, msgOnly{ActionWriteInsertGlobal, shortID(msgID)})
}

func (j *JSONL) AcceptEphemeral(_ context.Context, st State) {
	j.emit(st, typeOnly{ActionAcceptEphemeral})
}

func (j *JSONL) WriteDuplicate(_ context.Context, st State, msgID string) {
	j.emit(st, msgOnly{ActionWriteDuplicate, shortID(msgID)})
}

func (j *JSONL) AuthCheck(_ context.Context, st State, channel string, claimed tenant.CommunityID, allow bool) {
	verdict := "deny"
	if allow {
		verdict = "allow"
	}
	j.emit(st, authCheck{ActionAuthCheck, channel, label(claimed), verdict})
}

func (j *JSONL) ReadMessageRows(_ context.Context, st State, channel string, rows []tenant.CommunityID) {
	j.emit(st, readMessageRows{ActionReadMessageRows, channel, labels(rows)})
}

func (j *JSONL) ReadByIDRows(_ context.Context, st State, rows []tenant.CommunityID) {
	j.emit(st, readRows{ActionReadByIDRows, labels(rows)})
}

func (j *JSONL) ReadHostFeedRows(_ context.Context, st State, rows []tenant.CommunityID) {
	j.emit(st, readRows{ActionReadHostFeedRows, labels(rows)})
}

func (j *JSONL) SanitizedError(_ context.Context, st State, reason Reason) {
	j.emit(st, sanitizedError{ActionSanitizedError, reason})
}

func (j *JSONL) ImplBug(_ context.Context, st State, kind string) {
	j.emit(st, implBug{ActionImplBug, kind})
}

// Factory returns the Tracer of one newly bound connection or request. A
// relay configured with a Factory records one trace per connection, which is
// the unit the checker verifies.
type Factory func(tc tenant.TenantContext) Tracer

// Recorder keeps one in-memory JSONL trace per Open, for tests: pass
// Recorder.Open as the relay's Factory, then check every trace.
type Recorder struct {
	mu     sync.Mutex
	traces []*recording
}

type recording struct {
	host, community string
	buf             bytes.Buffer
	mu              sync.Mutex
}

func (r *recording) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

// Recorded is one trace a Recorder kept.
type Recorded struct {
	Host      string // the bound host it was opened for
	Community string // the bound community's label
	JSONL     []byte // the steps so far
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Open starts a new trace for a connection bound to tc.
func (r *Recorder) Open(tc tenant.TenantContext) Tracer {
	rec := &recording{host: tc.Host(), community: label(tc.Community())}
	r.mu.Lock()
	r.traces = append(r.traces, rec)
	r.mu.Unlock()
	return NewJSONL(rec)
}

// Traces returns a copy of every trace opened so far, in opening order.
func (r *Recorder) Traces() []Recorded {
	r.mu.Lock()
	recs := append([]*recording(nil), r.traces...)
	r.mu.Unlock()
	out := make([]Recorded, len(recs))
	for i, rec := range recs {
		rec.mu.Lock()
		out[i] = Recorded{Host: rec.host, Community: rec.community, JSONL: bytes.Clone(rec.buf.Bytes())}
		rec.mu.Unlock()
	}
	return out
}
