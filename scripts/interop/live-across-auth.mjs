// A check with nostr-tools: create a channel, subscribe before
// AUTH completes (the library answers the challenge by itself), publish,
// and expect every live message to arrive.
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay'
import { generateSecretKey, finalizeEvent, getPublicKey } from 'nostr-tools/pure'
import WebSocket from 'ws'
useWebSocketImplementation(WebSocket)

const url = process.argv[2] || 'ws://localhost:3000'
const now = () => Math.floor(Date.now() / 1000)
const signer = (sk) => (t) => finalizeEvent(t, sk)

async function publish(relay, sk, tmpl) {
  const ev = finalizeEvent({ created_at: now(), ...tmpl }, sk)
  try { return await relay.publish(ev) } catch (e) {
    if (!String(e.message).startsWith('auth-required')) throw e
    await relay.auth(signer(sk))
    return await relay.publish(ev)
  }
}

const owner = generateSecretKey()
const a = await Relay.connect(url); a.onauth = signer(owner)
const group = 'general' + Math.floor(Math.random() * 1e6)
await publish(a, owner, { kind: 9007, tags: [['h', group], ['name', group]], content: '' })
console.log('created channel', group)

let lost = 0
const runs = 12
for (let i = 0; i < runs; i++) {
  const sk = generateSecretKey()
  const s = await Relay.connect(url); s.onauth = signer(sk)
  const got = new Set()
  await new Promise((r) => setTimeout(r, [0, 50, 400][i % 3]))
  s.subscribe([{ kinds: [9], '#h': [group], since: now() - 1 }], { onevent: (e) => got.add(e.id) })
  await new Promise((r) => setTimeout(r, [0, 100, 500][Math.floor(i / 3) % 3]))
  const ev = await publish(a, owner, { kind: 9, tags: [['h', group]], content: `message ${i}` })
  const m = finalizeEvent({ kind: 9, created_at: now(), tags: [['h', group]], content: `message ${i}b` }, owner)
  await a.publish(m)
  await new Promise((r) => setTimeout(r, 1000))
  if (!got.has(m.id)) { lost++; console.log(`run ${i}: live message not delivered (got ${got.size})`) }
  s.close()
}
console.log(`${runs - lost}/${runs} subscriptions received the live message`)
a.close()
process.exit(lost ? 1 : 0)
