// NIP-29 interop check with nostr-tools' nip29 helpers, for anyone with
// Node (not part of the Go test suite, which does the same with go-nostr:
// TestNIP29Interop).
//
//   go run ./cmd/buzzd &            # or any buzzd; RELAY_URL as it serves
//   cd scripts && npm install && RELAY=ws://localhost:3000 node nip29-interop.mjs
//
// It creates groups with ids a standard client picks, finds their state by
// the NIP-11 key as nostr-tools' loadGroup does, and exercises flags,
// invites, joins, leaves, roles and the relay's own 9000/9001. It prints
// one line per check and exits non-zero on the first failure.
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { SimplePool, useWebSocketImplementation } from 'nostr-tools/pool'
import { fetchRelayInformation } from 'nostr-tools/nip11'
import * as nip29 from 'nostr-tools/nip29'
import WebSocket from 'ws'

useWebSocketImplementation(WebSocket)

const relay = process.env.RELAY || 'ws://localhost:3000'
const info = await fetchRelayInformation(relay)
const suffix = Math.random().toString(36).slice(2, 8)

function check(what, ok, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? ': ' + detail : ''}`)
  if (!ok) {
    process.exit(1)
  }
}

// user is one key with its own pool (its own connection and AUTH).
function user() {
  const sk = generateSecretKey()
  return { sk, pk: getPublicKey(sk), pool: new SimplePool() }
}

// publish returns '' when the relay accepted the event, else its message.
async function publish(u, template) {
  const ev = finalizeEvent({ ...template, content: template.content + ' ' + Math.random() }, u.sk)
  try {
    await Promise.all(u.pool.publish([relay], ev, { onauth: async t => finalizeEvent(t, u.sk) }))
    return ''
  } catch (err) {
    return String(err?.message ?? err)
  }
}

async function mustPublish(what, u, template) {
  const msg = await publish(u, template)
  check(what, msg === '', msg)
}

async function refused(what, u, template, prefix) {
  const msg = await publish(u, template)
  check(what, msg.includes(prefix), msg || 'accepted')
}

async function load(u, id) {
  return nip29.loadGroup({ pool: u.pool, groupReference: { id, host: new URL(relay).host }, normalizedRelayURL: relay, relayInformation: info })
}

check('supported_nips lists 29', (info.supported_nips || []).includes(29))
check('NIP-11 names a key', /^[0-9a-f]{64}$/.test(info.pubkey || ''), info.pubkey)

const alice = user()
const bob = user()
const id = `pizza-${suffix}`

// Create as nostr-tools builds it: no name; then flags through an edit.
await mustPublish('create group (no name)', alice, nip29.generateCreateGroupEventTemplate(id))
await refused('repeat create', alice, nip29.generateCreateGroupEventTemplate(id), 'restricted:')
let g = await load(alice, id)
check('loadGroup finds the group by the NIP-11 key', g.metadata.id === id && g.metadata.pubkey === info.pubkey)

g.metadata.name = 'Pizza'
g.metadata.isPrivate = true
g.metadata.isClosed = true
await mustPublish('edit: name, private, closed', alice, nip29.generateEditGroupMetadataEventTemplate(g))
g = await load(alice, id)
check('flags honoured in 39000', g.metadata.name === 'Pizza' && g.metadata.isPrivate && g.metadata.isClosed && g.metadata.isRestricted && !g.metadata.isHidden,
  JSON.stringify(g.metadata))

await refused('non-member posts in a restricted group', bob, { kind: 9, content: 'hi', created_at: Math.floor(Date.now() / 1000), tags: [['h', id]] }, 'restricted:')
await refused('join a closed group without a code', bob, nip29.generateGroupJoinRequestEventTemplate(id), 'restricted:')
await mustPublish('create invite', alice, nip29.generateCreateInviteEventTemplate(id, `code-${suffix}`))
await refused('join with a wrong code', bob, nip29.generateGroupJoinRequestEventTemplate(id, 'wrong'), 'restricted:')
await mustPublish('join with the invite code', bob, nip29.generateGroupJoinRequestEventTemplate(id, `code-${suffix}`))
await refused('repeat join', bob, nip29.generateGroupJoinRequestEventTemplate(id), 'duplicate:')

const put = await bob.pool.querySync([relay], { kinds: [9000], authors: [info.pubkey], '#h': [id], '#p': [bob.pk] },
  { onauth: async t => finalizeEvent(t, bob.sk) })
check('relay-signed 9000 after the join', put.length === 1, `${put.length} events`)

g = await load(alice, id)
check('members list the new member', (g.members || []).some(m => m.pubkey === bob.pk))

await mustPublish('put user with a role Buzz does not know', alice, nip29.generatePutUserEventTemplate(id, bob.pk, ['moderator']))
await mustPublish('leave', bob, nip29.generateGroupLeaveRequestEventTemplate(id))
const removed = await alice.pool.querySync([relay], { kinds: [9001], authors: [info.pubkey], '#h': [id], '#p': [bob.pk] },
  { onauth: async t => finalizeEvent(t, alice.sk) })
check('relay-signed 9001 after the leave', removed.length === 1, `${removed.length} events`)

g.metadata.isPrivate = false
g.metadata.isClosed = false
g.metadata.isHidden = true
await refused('hidden but public is refused, not dropped', alice, nip29.generateEditGroupMetadataEventTemplate(g), 'restricted:')

await refused('an id NIP-29 does not allow', alice, nip29.generateCreateGroupEventTemplate('Not Valid'), 'invalid:')
await refused('late publication', alice, { ...nip29.generateCreateGroupEventTemplate(`late-${suffix}`), created_at: Math.floor(Date.now() / 1000) - 2 * 86400 }, 'invalid:')

console.log('all NIP-29 checks passed')
process.exit(0)
