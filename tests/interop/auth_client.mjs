// NIP-42 AUTH, NIP-70 protected events and the credential kinds against a running graspd with the
// GRASP-01 policy (used by tests/integration/auth_test.cpp). Frames are read one by one over a
// plain WebSocket, so the order of the relay's AUTH and OK is checked; the AUTH events are made
// with nostr-tools' nip42.makeAuthEvent and finalizeEvent, and a nostr-tools Relay with onauth
// shows the automatic client flow.
// Usage: node auth_client.mjs ws://127.0.0.1:PORT
// Prints "ok <check>" / "fail <check>: <why>" and exits 0 only if all passed.
import WebSocket from 'ws';
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay';
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure';
import { makeAuthEvent } from 'nostr-tools/nip42';
import { check, withTimeout, finish } from './harness.mjs';

useWebSocketImplementation(WebSocket);

const url = process.argv[2];
const host = url.replace(/^ws:\/\//, '').replace(/\/$/, '');
const now = Math.floor(Date.now() / 1000);
const sign = (sk, kind, tags, content = '', at = now) =>
  finalizeEvent({ kind, created_at: at, tags, content }, sk);
/** A repository announcement listing this relay: what the GRASP-01 policy accepts from anyone. */
const announcement = (sk, d, extra = []) => sign(sk, 30617, [
  ['d', d], ['clone', `http://${host}/${getPublicKey(sk)}/${d}.git`], ['relays', url], ...extra]);

/** One connection read frame by frame. */
class Raw {
  static async open() {
    const raw = new Raw(new WebSocket(url));
    await withTimeout(new Promise((resolve, reject) => {
      raw.ws.once('open', resolve);
      raw.ws.once('error', reject);
    }), 5000, 'connect');
    return raw;
  }
  constructor(ws) {
    this.ws = ws;
    this.frames = [];
    this.waiting = null;
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(data.toString()));
      if (this.waiting) { this.waiting(); this.waiting = null; }
    });
  }
  send(frame) { this.ws.send(JSON.stringify(frame)); }
  async next(what) {
    if (this.frames.length === 0)
      await withTimeout(new Promise((resolve) => { this.waiting = resolve; }), 5000, what);
    return this.frames.shift();
  }
  /** Sends ["EVENT"|"AUTH", ev] and returns its OK as [accepted, message], frames before it. */
  async ok(verb, ev) {
    this.send([verb, ev]);
    const before = [];
    for (;;) {
      const frame = await this.next(`OK for ${verb}`);
      if (frame[0] === 'OK' && frame[1] === ev.id) return { accepted: frame[2], message: frame[3], before };
      before.push(frame);
    }
  }
  /** The stored events matching `filter`, up to EOSE. */
  async query(filter) {
    const id = `q${Math.random()}`;
    this.send(['REQ', id, filter]);
    const events = [];
    for (;;) {
      const frame = await this.next('query');
      if (frame[0] === 'EVENT' && frame[1] === id) events.push(frame[2]);
      if (frame[0] === 'EOSE' && frame[1] === id) break;
    }
    this.send(['CLOSE', id]);
    return events;
  }
  close() { this.ws.close(); }
}

const owner = generateSecretKey(), other = generateSecretKey();
const authFor = (sk, challenge, relay = url, at = now) =>
  finalizeEvent({ ...makeAuthEvent(relay, challenge), created_at: at }, sk);

try {
  // §8.1: AUTH before any challenge, then the challenge right before auth-required:.
  const c1 = await Raw.open();
  let r = await c1.ok('AUTH', authFor(owner, 'not sent'));
  check('AUTH before any challenge is invalid', !r.accepted && r.message.startsWith('invalid:'), r.message);
  const repo = announcement(owner, 'protected-demo', [['-']]);
  r = await c1.ok('EVENT', repo);
  const challenge = r.before.find((f) => f[0] === 'AUTH')?.[1];
  check('a protected EVENT is preceded by an AUTH challenge', typeof challenge === 'string' && /^[0-9a-f]{32}$/.test(challenge),
    JSON.stringify(r.before));
  check('a protected EVENT is refused with auth-required:', !r.accepted && r.message.startsWith('auth-required:'), r.message);

  // §8.2: each broken AUTH is invalid.
  const broken = {
    'wrong challenge': authFor(owner, 'f'.repeat(32)),
    'relay on another host': authFor(owner, challenge, url.replace('127.0.0.1', 'other.example')),
    'created_at 20 min old': authFor(owner, challenge, url, now - 1200),
    'bad signature': { ...authFor(owner, challenge), sig: authFor(other, challenge).sig },
  };
  for (const [what, ev] of Object.entries(broken)) {
    r = await c1.ok('AUTH', ev);
    check(`AUTH with ${what} is invalid`, !r.accepted && r.message.startsWith('invalid:'), r.message);
  }
  r = await c1.ok('AUTH', authFor(owner, challenge));
  check('a correct 22242 for the challenge is accepted', r.accepted && r.message === '', r.message);
  r = await c1.ok('EVENT', repo);
  check('the same protected EVENT is then accepted', r.accepted, r.message);
  check('the protected event is served', (await c1.query({ ids: [repo.id] })).length === 1);

  // §8.3: another key's protected event on a connection authenticated as the owner.
  const theirs = announcement(other, 'not-yours', [['-']]);
  r = await c1.ok('EVENT', theirs);
  check("another key's protected event is restricted:", !r.accepted && r.message.startsWith('restricted:'), r.message);
  check("another key's protected event is not stored", (await c1.query({ ids: [theirs.id] })).length === 0);

  // §8.5: credentials are refused and reach no subscriber; the marker, published after them,
  // must be the reader's first live event.
  const reader = await Raw.open();
  const marker = announcement(generateSecretKey(), 'marker');
  reader.send(['REQ', 'creds', { kinds: [22242, 27235] }, { ids: [marker.id] }]);
  const eose = await reader.next('EOSE');
  check('the reader subscribed', eose[0] === 'EOSE', JSON.stringify(eose));
  for (const kind of [22242, 27235]) {
    const credential = kind === 22242 ? authFor(owner, challenge)
      : sign(owner, 27235, [['u', `http://${host}/`], ['method', 'POST']]);
    r = await c1.ok('EVENT', credential);
    check(`EVENT of kind ${kind} is invalid`, !r.accepted && r.message === `invalid: ${kind} is a credential, not an event`, r.message);
  }
  r = await c1.ok('EVENT', marker);
  check('the marker is accepted', r.accepted, r.message);
  const first = await reader.next('live event');
  check('the subscribed reader receives no credential', first[0] === 'EVENT' && first[2].id === marker.id, JSON.stringify(first));
  reader.close();
  c1.close();

  // A nostr-tools client answers the challenge by itself (onauth) and publishes again.
  const relay = await withTimeout(Relay.connect(url), 5000, 'connect');
  relay.onauth = async (template) => finalizeEvent(template, other);
  const second = announcement(other, 'auto-auth', [['-']]);
  let refusal = '';
  try { await withTimeout(relay.publish(second), 5000, 'publish'); } catch (e) { refusal = e.message; }
  check('nostr-tools sees auth-required:', refusal.startsWith('auth-required:'), refusal);
  const authed = await withTimeout(relay.auth(relay.onauth), 5000, 'auth');
  check('nostr-tools authenticates with onauth', authed === '', String(authed));
  let accepted = '';
  try { accepted = await withTimeout(relay.publish(second), 5000, 'publish again'); } catch (e) { accepted = `refused: ${e.message}`; }
  check('nostr-tools publishes the protected event after AUTH', !accepted.startsWith('refused'), accepted);
  relay.close();
} catch (e) {
  check('no exception', false, e.stack);
}
finish();
