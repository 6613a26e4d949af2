package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/buzzrelay/buzz/tenant"
)

type dir map[string]tenant.CommunityID

func (d dir) LookupHost(_ context.Context, h string) (tenant.CommunityID, error) {
	if id, ok := d[h]; ok {
		return id, nil
	}
	return tenant.CommunityID{}, tenant.ErrUnmappedHost
}

func bound(t *testing.T) (tenant.TenantContext, tenant.CommunityID) {
	t.Helper()
	id := tenant.NewCommunityID()
	tc, err := tenant.Bind(context.Background(), dir{"a.example": id}, "A.Example:443")
	if err != nil {
		t.Fatal(err)
	}
	return tc, id
}

func lines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestJSONLStepShape(t *testing.T) {
	tc, id := bound(t)
	var buf bytes.Buffer
	tr := NewJSONL(&buf)
	pk := strings.Repeat("ab", 32)
	evID := strings.Repeat("cd", 32)
	ch := "cafe0000-0000-0000-0000-000000000010"
	ctx := context.Background()
	tr.WriteInsert(ctx, State{Tenant: tc, Actor: pk}, evID, ch, id)
	tr.AuthCheck(ctx, State{Tenant: tc}, ch, tenant.CommunityID{}, false)
	tr.ReadByIDRows(ctx, State{Tenant: tc}, nil)
	got := lines(t, buf.Bytes())
	if len(got) != 3 {
		t.Fatalf("%d lines", len(got))
	}
	want0 := `{"schema_version":2,"action":{"type":"write_insert","msg_id":"cdcdcdcdcdcdcdcd","channel":"` + ch + `","claimed_community":"` + id.String() + `"},"state_after":{"resolved_community":"` + id.String() + `","bound_host":"a.example","actor":"abababababababab"}}`
	if first := strings.SplitN(buf.String(), "\n", 2)[0]; first != want0 {
		t.Fatalf("line 1:\n%s\nwant\n%s", first, want0)
	}
	if a := got[1]["action"].(map[string]any); a["claimed_community"] != "" || a["verdict"] != "deny" {
		t.Fatalf("auth_check %v", a)
	}
	if got[1]["state_after"].(map[string]any)["actor"] != nil {
		t.Fatal("unauthenticated actor is not null")
	}
	if rows, ok := got[2]["action"].(map[string]any)["row_communities"].([]any); !ok || len(rows) != 0 {
		t.Fatalf("no rows must be an empty array, got %v", got[2]["action"])
	}
}

func TestJSONLConcurrentLinesStayWhole(t *testing.T) {
	tc, id := bound(t)
	var buf bytes.Buffer
	tr := NewJSONL(&buf)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				tr.ReadHostFeedRows(context.Background(), State{Tenant: tc}, []tenant.CommunityID{id, id})
			}
		}()
	}
	wg.Wait()
	if n := len(lines(t, buf.Bytes())); n != 400 {
		t.Fatalf("%d whole lines, want 400", n)
	}
}

func TestGuard(t *testing.T) {
	tc, _ := bound(t)
	st := State{Tenant: tc}
	ctx := context.Background()

	var buf bytes.Buffer
	tr := NewJSONL(&buf)
	g := Arm(tr, st, "req")
	g.Release(ctx)
	g.Release(ctx) // only once
	got := lines(t, buf.Bytes())
	if len(got) != 1 {
		t.Fatalf("%d steps, want 1 impl_bug", len(got))
	}
	if a := got[0]["action"].(map[string]any); a["type"] != ActionImplBug || a["kind"] != "unemitted:req" {
		t.Fatalf("step %v", a)
	}

	buf.Reset()
	g = Arm(tr, st, "ingest")
	if g.Emitted() {
		t.Fatal("fresh guard reports an emission")
	}
	g.SanitizedError(ctx, st, ReasonInvalid)
	g.Release(ctx)
	got = lines(t, buf.Bytes())
	if len(got) != 1 || got[0]["action"].(map[string]any)["type"] != ActionSanitizedError || !g.Emitted() {
		t.Fatalf("steps %v", got)
	}

	// Every method counts as an emission.
	emitters := map[string]func(*Guard){
		"WriteInsert":       func(g *Guard) { g.WriteInsert(ctx, st, "", "", tenant.CommunityID{}) },
		"WriteInsertGlobal": func(g *Guard) { g.WriteInsertGlobal(ctx, st, "") },
		"AcceptEphemeral":   func(g *Guard) { g.AcceptEphemeral(ctx, st) },
		"WriteDuplicate":    func(g *Guard) { g.WriteDuplicate(ctx, st, "") },
		"AuthCheck":         func(g *Guard) { g.AuthCheck(ctx, st, "", tenant.CommunityID{}, true) },
		"ReadMessageRows":   func(g *Guard) { g.ReadMessageRows(ctx, st, "", nil) },
		"ReadByIDRows":      func(g *Guard) { g.ReadByIDRows(ctx, st, nil) },
		"ReadHostFeedRows":  func(g *Guard) { g.ReadHostFeedRows(ctx, st, nil) },
		"SanitizedError":    func(g *Guard) { g.SanitizedError(ctx, st, ReasonRestricted) },
		"ImplBug":           func(g *Guard) { g.ImplBug(ctx, st, "x") },
	}
	for name, emit := range emitters {
		buf.Reset()
		g := Arm(tr, st, "s")
		emit(g)
		g.Release(ctx)
		if n := len(lines(t, buf.Bytes())); n != 1 || !g.Emitted() {
			t.Errorf("%s: %d steps after release, want exactly the emitted one", name, n)
		}
	}

	// A nil or no-op tracer gives a nil Guard that does nothing.
	for _, tr := range []Tracer{nil, Noop{}} {
		g := Arm(tr, st, "x")
		if g != nil {
			t.Fatalf("Arm(%T) = %v, want nil", tr, g)
		}
		for _, emit := range emitters {
			emit(g)
		}
		g.Release(ctx)
		if g.Emitted() {
			t.Fatal("nil guard reports an emission")
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		g := Arm(Noop{}, st, "x")
		g.AcceptEphemeral(ctx, st)
		g.Release(ctx)
	}); n != 0 {
		t.Fatalf("armed no-op seam allocates %v times", n)
	}
}

func TestRecorder(t *testing.T) {
	tc, id := bound(t)
	rec := NewRecorder()
	a := rec.Open(tc)
	b := rec.Open(tc)
	a.AcceptEphemeral(context.Background(), State{Tenant: tc})
	got := rec.Traces()
	if len(got) != 2 || got[0].Host != "a.example" || got[0].Community != id.String() {
		t.Fatalf("traces %+v", got)
	}
	if len(lines(t, got[0].JSONL)) != 1 || len(got[1].JSONL) != 0 {
		t.Fatal("steps went to the wrong trace")
	}
	b.AcceptEphemeral(context.Background(), State{Tenant: tc})
	if len(got[1].JSONL) != 0 {
		t.Fatal("Traces did not return a copy")
	}
}
