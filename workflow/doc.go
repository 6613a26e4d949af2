// Package workflow is buzz's workflow engine: channel automations authored
// as YAML (Buzz's format, so Buzz definitions load unchanged), triggered by
// events the relay stores, and executed as durable runs.
//
// # Pieces
//
//   - Definitions (Parse, Definition): YAML decoded with go.yaml.in/yaml/v3,
//     validated with errors that name the field (FieldError), stored as
//     canonical JSON plus its SHA-256 (Definition.CanonicalJSON, Hash). A
//     definition's Revision is the first 16 bytes of that hash in hex: the
//     value a later expected-revision compares against.
//   - Conditions (trigger filter, step if): CEL expressions, parsed at
//     definition time and evaluated sandboxed, at most 4 KiB, with a cost
//     limit and a 100 ms deadline. Buzz's flat variables (trigger_text,
//     trigger_author, …, steps_ID_output_F) and helpers (str_contains,
//     starts_with, ends_with, len) are provided, so Buzz conditions evaluate
//     as written; the same values are also reachable as maps (trigger.text,
//     steps.ID.output.F).
//   - Templates in action fields: {{trigger.x}}, {{steps.ID.output.F}},
//     with filters truncate(N), npub (alias truncate_pubkey) and json,
//     expanded in a single pass: text substituted into a template is never
//     expanded again, so a user who writes "{{…}}" gets it back literally.
//   - Store: what the engine needs from storage (definitions with
//     compare-and-swap revisions, runs unique per (workflow, trigger event),
//     a per-step trace, leases with heartbeats, effect records keyed by
//     idempotency key, parked runs). store/postgres and store/embedded
//     implement it; workflowtest is the conformance suite both pass.
//   - Engine: built from a Store, an EventSource and a Publisher. Triggers
//     are persisted as pending runs before anything else happens (a full
//     worker pool queues them, never drops them); workers claim runs by
//     lease, heartbeat while they execute, and a run whose pod died is
//     taken over once its lease lapses. Every background loop is supervised
//     (a panic is logged and the loop restarted) and reported by Health.
//   - Schedules (Schedule, ScheduleStore, Engine.ScheduleTick): schedule
//     triggers (cron via github.com/adhocore/gronx, or an interval) fire
//     the latest slot at or before now of each due schedule, claimed once
//     across engines by a row in scheduled_workflow_fires written in the
//     same transaction as the pending run.
//   - Actions: an interface and a registry (WithAction) so an embedder adds
//     its own. Built in: send_message, add_reaction, set_channel_topic,
//     delay, send_dm and call_webhook (the last two through the DMSealer and
//     WebhookCaller interfaces the embedder supplies; SafeHTTPWebhooks is a
//     WebhookCaller on package safehttp's SSRF-hardened client).
//
// # Why CEL and not expr
//
// Both github.com/google/cel-go and github.com/expr-lang/expr are well kept,
// fast and sandboxed (no I/O, no reflection into host objects beyond what
// is passed in). CEL was chosen because its sandbox is a language property
// rather than a configuration: it is not Turing complete (no loops beyond
// bounded comprehensions over the input), evaluation cost is computed and
// capped (cel.CostLimit) and interruptible by a context, and it is the
// policy language of Kubernetes, Envoy and Firebase, so its limits have
// been hardened against hostile input. expr has a node limit and memory
// budget but its builtins (map, filter, reduce over ranges) need more care
// to bound. Buzz's syntax (str_contains(trigger_text, "ping") && …) is valid
// CEL once the helpers are declared, so nothing is lost.
//
// # Exactly-once effects
//
// An action that changes the outside world records its effect in the store
// before performing it (the intent, e.g. the signed event to publish) and
// after (the result). A run taken over after its pod died finds the record:
// a finished effect is not repeated (its result is reused); an unfinished
// one is replayed only when replaying is harmless — publishing the same
// signed event again is deduplicated by its id — and otherwise (a webhook
// call) the step fails with error code effect_uncertain rather than calling
// twice. Status events (46001–46007) are informational and may repeat after
// a takeover.
//
// # Dependencies
//
// Package workflow owns the engine and the Buzz workflow format. It depends
// on audit, channel, nostr, safehttp and tenant, and reaches the relay and
// its store through the interfaces it defines; it must not import the relay
// (package buzz), store, a store backend, pubsub or ingest.
package workflow
