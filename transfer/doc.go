// Package transfer moves a deployment's data between stores: Export writes
// communities, their state and their events as a buzz export, Import reads
// one into any store. buzzd export and buzzd import are thin wrappers; an
// embedder calls the functions with its own store, which implements the
// small interfaces defined here (store/embedded and store/postgres implement
// them all).
//
// # Format, version 1
//
// A buzz export is UTF-8 JSON lines. The first line is the header,
// {"buzz_export":1}; a reader refuses a newer version. Then, for each
// community (oldest first), one record a line, every record an object with
// "type" first and "host" (the community's primary host) second:
//
//	community          id (UUID), owner, created_at, archived_at, access,
//	                   profile {name, description, icon, contact},
//	                   aliases [{host, created_at}]
//	member             pubkey, role (admin, moderator, member), added_at
//	channel            id, slug, name, about, picture, visibility,
//	                   channel_type, created_by, created_at, deleted_at,
//	                   closed, restricted, hidden
//	channel_member     channel, pubkey, role, joined_at, added_by
//	name               pubkey, name (NIP-05 local part), updated_at
//	restriction        pubkey, kind (ban, timeout), until, reason, actor,
//	                   created_at
//	report             id, reporter, target_pubkey, target_event,
//	                   report_type, created_at, status, received_at,
//	                   resolved_by, resolved_at, event (the report event)
//	moderation_action  action, actor, target, reason, until, status,
//	                   event_id, created_at
//	workflow           id, channel, owner, name, definition (canonical
//	                   JSON), hash, event_id, enabled, created_ms,
//	                   updated_ms, webhook_secret_hash,
//	                   schedule {next_fire_ms, since_ms}
//	workflow_run       id, workflow, status, trigger_event_id, trigger,
//	                   definition_hash, current_step, trace, error_code,
//	                   error, resume_ms, created_ms, started_ms,
//	                   completed_ms, effects [{key, intent, done, result,
//	                   created_ms, finished_ms}]
//	approval           token_hash, workflow, run, step_id, step_index,
//	                   approver, message, status, decided_by, decided_ms,
//	                   expires_ms, created_ms
//	schedule_fire      workflow, slot_ms, claimed_ms, run
//	audit              seq, prev_hash, hash, version, action, actor,
//	                   object, detail, time_us
//	event              event: the event exactly as signed and stored
//
// An export asked to carry the deployment's relay key
// (ExportOptions.RelayKey) has, right after the header and before any
// community, {"type":"relay_key","secret_key":…,"pubkey":…}: a secret.
//
// The last record is the end record, {"type":"end","communities":N,"events":N,
// "records":N}, whose counts let a reader tell a complete export from a
// truncated one. Times are unix seconds; the workflow records' (fields
// ending in _ms) milliseconds, audit entries' microseconds (time_us, part
// of their hash). Keys and ids are lowercase hex; optional
// fields are omitted when empty. Events come newest first (created_at
// descending, then id), as stored: the live version of each replaceable
// event, no deleted or expired event, deletion requests included. A
// community's audit chain is complete from seq 1, so a reader verifies it
// as it goes. Exporting the same state twice, from either backend, gives
// the same bytes.
//
// The workflow records were added to version 1 compatibly: a reader that
// predates them refuses them as unknown types rather than misreading them.
//
// Not carried (version 1): product feedback; the deployment's settings and
// main host; the relay key unless asked for; run leases (a restored run
// that is not terminal is claimable again, from its resume time); webhook
// secrets themselves (only their hash is stored anywhere). Deletion tombstones are not records of their own: the
// deletion requests that made them are carried, and storing those again
// makes the tombstones again.
//
// # Import
//
// Import validates every line before it changes anything: an event's id
// and signature, an audit entry's hash and link, a record's fields, and
// that its host was introduced by a community record earlier in the file.
// It never changes or removes what the destination holds: a community
// whose id exists there gains only the aliases it lacks, rows already
// present are kept, and a host or name held by another community or key
// refuses the line. A second import of the same export therefore adds
// nothing. Workflows, runs (with their effects), approvals and schedule
// slots are inserted only when absent, and only into the community whose
// record introduced them: a run, approval or slot naming a workflow or run
// the community lacks is refused. A relay_key record stores the key when
// the destination holds none, and is refused (ErrRelayKeyDiffers) when it
// holds another, which is kept. A refused line stops the import unless ImportOptions.KeepGoing.
// Import reads line by line and stores events in batches (each one write
// of an EventBatchDestination), so its memory does not grow with the
// export.
package transfer
