package transfer

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/buzzrelay/buzz/tenant"
	"github.com/buzzrelay/buzz/workflow"
)

// keepDest records what restoreWorkflowRecord hands a destination.
type keepDest struct {
	w []workflow.WorkflowState
	r []workflow.RunState
	a []workflow.Approval
	f []workflow.FireState
}

func (k *keepDest) RestoreWorkflow(_ context.Context, _ tenant.CommunityID, w workflow.WorkflowState) (bool, error) {
	k.w = append(k.w, w)
	return true, nil
}

func (k *keepDest) RestoreRun(_ context.Context, _ tenant.CommunityID, r workflow.RunState) (bool, error) {
	k.r = append(k.r, r)
	return true, nil
}

func (k *keepDest) RestoreApproval(_ context.Context, _ tenant.CommunityID, a workflow.Approval) (bool, error) {
	k.a = append(k.a, a)
	return true, nil
}

func (k *keepDest) RestoreScheduleFire(_ context.Context, _ tenant.CommunityID, f workflow.FireState) (bool, error) {
	k.f = append(k.f, f)
	return true, nil
}

// FuzzWorkflowRecord: the workflow records' parser never panics, and what
// it accepts has non-zero ids, a definition matching its hash, and a known
// status.
func FuzzWorkflowRecord(f *testing.F) {
	id, wf := "0190c8a4-0000-7000-8000-000000000001", "0190c8a4-0000-7000-8000-000000000002"
	def := `{"enabled":true,"name":"T","steps":[{"action":"send_message","id":"s","text":"hi"}],"trigger":{"on":"message_posted"}}`
	d, err := workflow.DecodeJSON([]byte(def), nil)
	if err != nil {
		f.Fatal(err)
	}
	h := d.Hash()
	hash := ""
	for _, b := range h {
		hash += string("0123456789abcdef"[b>>4]) + string("0123456789abcdef"[b&15])
	}
	key := strings.Repeat("ab", 32)
	for _, s := range []struct{ typ, line string }{
		{TypeWorkflow, `{"type":"workflow","host":"a.example","id":"` + wf + `","channel":"` + id + `","owner":"` + key + `","name":"T","definition":` + def +
			`,"hash":"` + hash + `","enabled":true,"created_ms":1,"updated_ms":2,"schedule":{"since_ms":1}}`},
		{TypeWorkflowRun, `{"type":"workflow_run","host":"a.example","id":"` + id + `","workflow":"` + wf + `","status":"running","trigger_event_id":"` + key +
			`","trigger":{"text":"x","n":1},"current_step":1,"trace":[{"step_id":"s","status":"completed","started_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:00:01Z"}],"created_ms":5,"effects":[{"key":"k","intent":"eA==","done":false,"created_ms":5}]}`},
		{TypeApproval, `{"type":"approval","host":"a.example","token_hash":"` + key + `","workflow":"` + wf + `","run":"` + id + `","step_id":"s","step_index":0,"approver":"any","message":"","status":"pending","expires_ms":9,"created_ms":1}`},
		{TypeScheduleFire, `{"type":"schedule_fire","host":"a.example","workflow":"` + wf + `","slot_ms":60000,"claimed_ms":60001,"run":"` + id + `"}`},
		{TypeWorkflowRun, `{"type":"workflow_run","status":"nope"}`},
		{TypeApproval, `{"approver":"bob"}`},
		{TypeWorkflow, `[]`},
	} {
		f.Add(s.typ, []byte(s.line))
	}
	f.Fuzz(func(t *testing.T, typ string, line []byte) {
		switch typ {
		case TypeWorkflow, TypeWorkflowRun, TypeApproval, TypeScheduleFire:
		default:
			return
		}
		k := &keepDest{}
		added, err := restoreWorkflowRecord(context.Background(), k, typ, tenant.CommunityID{}, line)
		if err != nil {
			if added {
				t.Fatal("added and refused")
			}
			return
		}
		for _, w := range k.w {
			if w.ID.IsZero() || w.Definition == nil || w.Definition.Hash() != w.Hash {
				t.Fatalf("accepted workflow %+v", w)
			}
		}
		for _, r := range k.r {
			if r.ID.IsZero() || r.Workflow.IsZero() || len(r.TriggerEventID) != 64 {
				t.Fatalf("accepted run %+v", r)
			}
		}
		for _, a := range k.a {
			if a.Run.IsZero() || a.Workflow.IsZero() || (a.Approver != workflow.ApproverAny && len(a.Approver) != 64) {
				t.Fatalf("accepted approval %+v", a)
			}
		}
		for _, f := range k.f {
			if f.Workflow.IsZero() {
				t.Fatalf("accepted fire %+v", f)
			}
		}
	})
}

// TestWorkflowRecordSeedsAccepted: the well-formed seeds are accepted (so
// the fuzz target explores from valid records).
func TestWorkflowRecordSeedsAccepted(t *testing.T) {
	k := &keepDest{}
	id, wf := "0190c8a4-0000-7000-8000-000000000001", "0190c8a4-0000-7000-8000-000000000002"
	key := strings.Repeat("ab", 32)
	for typ, line := range map[string]string{
		TypeApproval:     `{"type":"approval","host":"a.example","token_hash":"` + key + `","workflow":"` + wf + `","run":"` + id + `","step_id":"s","step_index":0,"approver":"any","message":"","status":"pending","expires_ms":9,"created_ms":1}`,
		TypeScheduleFire: `{"type":"schedule_fire","host":"a.example","workflow":"` + wf + `","slot_ms":60000,"claimed_ms":60001,"run":"` + id + `"}`,
		TypeWorkflowRun: `{"type":"workflow_run","host":"a.example","id":"` + id + `","workflow":"` + wf + `","status":"running","trigger_event_id":"` + key +
			`","trigger":{"text":"x","n":1},"current_step":1,"trace":[],"created_ms":5,"effects":[{"key":"k","intent":"eA==","done":false,"created_ms":5}]}`,
	} {
		if _, err := restoreWorkflowRecord(context.Background(), k, typ, tenant.CommunityID{}, []byte(line)); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
	}
	def := `{"enabled":true,"name":"T","steps":[{"action":"send_message","id":"s","text":"hi"}],"trigger":{"on":"message_posted"}}`
	d, err := workflow.DecodeJSON([]byte(def), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := d.Hash()
	wline := `{"type":"workflow","host":"a.example","id":"` + wf + `","channel":"` + id + `","owner":"` + key + `","name":"T","definition":` + def +
		`,"hash":"` + hex.EncodeToString(h[:]) + `","enabled":true,"created_ms":1,"updated_ms":2}`
	if _, err := restoreWorkflowRecord(context.Background(), k, TypeWorkflow, tenant.CommunityID{}, []byte(wline)); err != nil || len(k.w) != 1 {
		t.Errorf("workflow: %v", err)
	}
	if _, err := restoreWorkflowRecord(context.Background(), k, TypeWorkflow, tenant.CommunityID{},
		[]byte(strings.Replace(wline, `"text":"hi"`, `"text":"ho"`, 1))); err == nil {
		t.Error("a definition that does not match its hash was accepted")
	}
	if len(k.r) != 1 || len(k.r[0].Effects) != 1 || string(k.r[0].Effects[0].Intent) != "x" {
		t.Errorf("run restored as %+v", k.r)
	}
	if _, err := restoreWorkflowRecord(context.Background(), k, TypeWorkflowRun, tenant.CommunityID{},
		[]byte(`{"type":"workflow_run","host":"a.example","id":"`+id+`","workflow":"`+wf+`","status":"leased","trigger_event_id":"`+key+`"}`)); err == nil {
		t.Error("an unknown run status was accepted")
	}
}
