// Package conformance is the isolation conformance harness: the relay
// reports every tenant decision to a trace.Tracer, and checker — which
// imports nothing of buzz and re-implements the isolation rules from the
// specification — replays the recorded trace and reports
//
//   - IllegalTransition: a step the model forbids (an allow or a write whose
//     claimed community is not the resolved one; an unknown action; a
//     malformed step or schema version),
//   - StateMismatch: the bound community, host or actor changed mid-trace,
//   - NonInterference: a row labelled with a foreign community reached the
//     client,
//   - CoverageBreach: an empty trace, a seam that ran without emitting
//     (impl_bug) or a required action never observed.
//
// What it does not catch: anything the relay does not trace (an unarmed
// seam), leaks across processes (each trace is one connection on one
// process), timing channels, and spec bugs shared by relay and checker. In
// production the tracer is trace.Noop; the harness only observes and never
// feeds back into a decision.
//
// The golden fixtures in checker/testdata are generated from typed
// trace.Tracer calls by this package's test (set BUZZ_CONFORMANCE_UPDATE=1
// to rewrite them after a deliberate schema change), so a schema change in
// the writer cannot silently diverge from the checker.
//
// Package trace imports only tenant; package checker imports nothing of
// buzz; neither may import the relay (package buzz) or a store.
package conformance
