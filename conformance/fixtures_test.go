package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/buzzrelay/buzz/conformance/checker"
	"github.com/buzzrelay/buzz/conformance/trace"
	"github.com/buzzrelay/buzz/tenant"
)

// Fixed labels, as in Buzz's fixtures: community A is aaaa…, B is bbbb….
var (
	commA = tenant.FromUUID([16]byte{0xaa, 0xaa, 15: 0x01})
	commB = tenant.FromUUID([16]byte{0xbb, 0xbb, 15: 0x02})
)

const (
	hostA    = "a.example.test"
	hostB    = "b.example.test"
	chanA    = "cafe0000-0000-0000-0000-000000000010"
	chanB    = "cafe0000-0000-0000-0000-000000000020"
	actor    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	msg1     = "d34db33fcafef00d00000000000000000000000000000000000000000000000a"
	msg2     = "d34db33fcafef00e00000000000000000000000000000000000000000000000b"
	msg3     = "d34db33fcafef00f00000000000000000000000000000000000000000000000c"
	fixtures = "checker/testdata"
)

type dir map[string]tenant.CommunityID

func (d dir) LookupHost(_ context.Context, h string) (tenant.CommunityID, error) {
	if id, ok := d[h]; ok {
		return id, nil
	}
	return tenant.CommunityID{}, tenant.ErrUnmappedHost
}

func bind(t *testing.T, host string) tenant.TenantContext {
	t.Helper()
	tc, err := tenant.Bind(context.Background(), dir{hostA: commA, hostB: commB}, host)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// goodSession is a connection on host A exercising every seam legally.
func goodSession(t *testing.T, tr trace.Tracer) {
	ctx := context.Background()
	anon := trace.State{Tenant: bind(t, hostA)}
	st := trace.State{Tenant: anon.Tenant, Actor: actor}
	tr.SanitizedError(ctx, anon, trace.ReasonRestricted) // auth-required before AUTH
	tr.AuthCheck(ctx, st, chanA, commA, true)
	tr.WriteInsert(ctx, st, msg1, chanA, commA)
	tr.WriteInsertGlobal(ctx, st, msg2)
	tr.AcceptEphemeral(ctx, st)
	tr.WriteDuplicate(ctx, st, msg1)
	tr.AuthCheck(ctx, st, chanB, commB, false) // a foreign h: denied
	tr.AuthCheck(ctx, st, chanB, tenant.CommunityID{}, false)
	tr.ReadMessageRows(ctx, st, chanA, []tenant.CommunityID{commA, commA})
	tr.ReadByIDRows(ctx, st, []tenant.CommunityID{commA})
	tr.ReadByIDRows(ctx, st, nil) // a foreign id: no rows
	tr.ReadHostFeedRows(ctx, st, []tenant.CommunityID{commA, commA, commA})
	tr.SanitizedError(ctx, st, trace.ReasonInvalid)
	tr.SanitizedError(ctx, st, trace.ReasonServerError)
}

// The fixtures: each built from typed Tracer calls, with the verdicts the
// checker must return.
var fixtureCases = []struct {
	file  string
	build func(t *testing.T, tr trace.Tracer)
	want  []checker.Verdict
}{
	{"good.jsonl", goodSession, nil},
	{"bad_host_channel_mismatch.jsonl", func(t *testing.T, tr trace.Tracer) {
		// A connection on host A allowed into a channel of community B.
		st := trace.State{Tenant: bind(t, hostA), Actor: actor}
		tr.AuthCheck(context.Background(), st, chanB, commB, true)
		tr.WriteInsert(context.Background(), st, msg3, chanB, commB)
	}, []checker.Verdict{checker.IllegalTransition}},
	{"bad_foreign_row_leak.jsonl", func(t *testing.T, tr trace.Tracer) {
		st := trace.State{Tenant: bind(t, hostA), Actor: actor}
		tr.ReadMessageRows(context.Background(), st, chanA, []tenant.CommunityID{commA})
		tr.ReadByIDRows(context.Background(), st, []tenant.CommunityID{commA, commB})
	}, []checker.Verdict{checker.NonInterference}},
	{"bad_coverage_breach.jsonl", func(t *testing.T, tr trace.Tracer) {
		ctx := context.Background()
		st := trace.State{Tenant: bind(t, hostA), Actor: actor}
		tr.WriteInsertGlobal(ctx, st, msg1)
		g := trace.Arm(tr, st, "req")
		g.Release(ctx) // the read seam returned without emitting
	}, []checker.Verdict{checker.CoverageBreach}},
	{"bad_state_mismatch.jsonl", func(t *testing.T, tr trace.Tracer) {
		// One connection's trace that suddenly speaks for host B.
		ctx := context.Background()
		tr.WriteInsertGlobal(ctx, trace.State{Tenant: bind(t, hostA), Actor: actor}, msg1)
		tr.AcceptEphemeral(ctx, trace.State{Tenant: bind(t, hostB), Actor: actor})
	}, []checker.Verdict{checker.StateMismatch}},
}

// TestGoldenFixtures regenerates every fixture from typed calls, requires the
// committed file to match byte for byte (BUZZ_CONFORMANCE_UPDATE=1 rewrites
// them), and checks that the checker returns the fixture's verdicts.
func TestGoldenFixtures(t *testing.T) {
	update := os.Getenv("BUZZ_CONFORMANCE_UPDATE") == "1"
	ck, err := checker.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, fc := range fixtureCases {
		t.Run(fc.file, func(t *testing.T) {
			var buf bytes.Buffer
			tr := trace.NewJSONL(&buf)
			fc.build(t, tr)
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(fixtures, fc.file)
			if update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			committed, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with BUZZ_CONFORMANCE_UPDATE=1 to create it)", err)
			}
			if !bytes.Equal(committed, buf.Bytes()) {
				t.Fatalf("%s differs from what the tracer writes now; if the schema changed on purpose, rerun with BUZZ_CONFORMANCE_UPDATE=1\ncommitted:\n%s\nwritten:\n%s", path, committed, buf.Bytes())
			}
			rep := ck.CheckBytes(committed)
			if got := rep.Verdicts(); !equalVerdicts(got, fc.want) {
				t.Fatalf("verdicts %v, want %v; violations: %v", got, fc.want, rep.Violations)
			}
		})
	}
}

func equalVerdicts(a, b []checker.Verdict) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRecorderTracesAreCheckedPerConnection is the shape of the relay's
// scenario test: one Recorder as the relay's trace.Factory, a connection per
// host, each recorded trace fed to the checker on its own.
func TestRecorderTracesAreCheckedPerConnection(t *testing.T) {
	rec := trace.NewRecorder()
	var factory trace.Factory = rec.Open
	ctx := context.Background()
	for _, h := range []string{hostA, hostB} {
		tc := bind(t, h)
		tr := factory(tc)
		st := trace.State{Tenant: tc, Actor: actor}
		g := trace.Arm(tr, st, "ingest")
		g.WriteInsertGlobal(ctx, st, msg1) // the same id in both communities: two rows
		g.Release(ctx)
		tr.ReadHostFeedRows(ctx, st, []tenant.CommunityID{tc.Community()})
	}
	ck, err := checker.New(checker.WithRequired(checker.ActionWriteInsertGlobal, checker.ActionReadHostFeedRows))
	if err != nil {
		t.Fatal(err)
	}
	traces := rec.Traces()
	if len(traces) != 2 || traces[0].Host != hostA || traces[1].Community != commB.String() {
		t.Fatalf("recorded %+v", traces)
	}
	for _, tr := range traces {
		if rep := ck.CheckBytes(tr.JSONL); !rep.OK() || rep.Steps != 2 {
			t.Fatalf("trace of %s: %d steps, %v", tr.Host, rep.Steps, rep.Violations)
		}
	}
	// Concatenated, the two connections are one trace that changes tenant.
	both := append(append([]byte{}, traces[0].JSONL...), traces[1].JSONL...)
	if rep := ck.CheckBytes(both); !rep.Has(checker.StateMismatch) {
		t.Fatalf("two tenants in one trace accepted: %v", rep.Violations)
	}
}

// TestUnboundSeamIsIllegal: a seam reached without a bound tenant writes an
// empty community, which the checker refuses.
func TestUnboundSeamIsIllegal(t *testing.T) {
	var buf bytes.Buffer
	tr := trace.NewJSONL(&buf)
	tr.AcceptEphemeral(context.Background(), trace.State{})
	ck, _ := checker.New()
	if rep := ck.CheckBytes(buf.Bytes()); !rep.Has(checker.IllegalTransition) {
		t.Fatalf("unbound step accepted: %v", rep.Violations)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestJSONLKeepsWriteError(t *testing.T) {
	tr := trace.NewJSONL(failingWriter{})
	tr.AcceptEphemeral(context.Background(), trace.State{Tenant: bind(t, hostA)})
	if tr.Err() == nil {
		t.Fatal("write error lost")
	}
}
