// nostr-tools' NIP-77 client (NegentropySync) against a running graspd (used by
// tests/integration/negentropy_e2e_test.cpp). Usage: node negentropy_client.mjs ws://127.0.0.1:PORT CAP
// where CAP is the graspd's NGIT_NEGENTROPY_MAX_SYNC_EVENTS. graspd and the client each hold events
// the other lacks (many on one created_at); the sync must report exactly the differences, a
// download + upload must leave both sides equal, and the raw NEG-* error answers must match NIP-77.
import WebSocket from 'ws';
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay';
import { generateSecretKey, finalizeEvent } from 'nostr-tools/pure';
import { nip77 } from 'nostr-tools';
import { check, withTimeout, collect, finish } from './harness.mjs';

useWebSocketImplementation(WebSocket);

const url = process.argv[2];
const cap = Number(process.argv[3]);
const sk = generateSecretKey();
const tag = 'neg-' + Math.random().toString(36).slice(2);
const t0 = Math.floor(Date.now() / 1000) - 1000;
const make = (i) =>
  finalizeEvent({ kind: 1, created_at: t0 + (i % 3 === 0 ? 0 : i), tags: [['t', tag]], content: `e${i}` }, sk);

const both = Array.from({ length: 120 }, (_, i) => make(i));
const relayOnly = Array.from({ length: 60 }, (_, i) => make(1000 + i));
const clientOnly = Array.from({ length: 40 }, (_, i) => make(2000 + i));
// Other events on the relay: they take the whole-store filter past the cap.
const padding = Array.from({ length: 40 }, (_, i) =>
  finalizeEvent({ kind: 1, created_at: t0 + i, tags: [['t', tag + '-other']], content: `p${i}` }, sk));

/** Runs NegentropySync over `events` for the tag filter; resolves { have, need, error }. */
function reconcile(relay, events, filter = { '#t': [tag] }) {
  const storage = new nip77.NegentropyStorageVector();
  for (const ev of events) storage.insert(ev.created_at, ev.id);
  storage.seal();
  const have = new Set(), need = new Set();
  return withTimeout(new Promise((resolve) => {
    const sync = new nip77.NegentropySync(relay, storage, filter, {
      onhave: (id) => have.add(id),
      onneed: (id) => need.add(id),
      onclose: (error) => resolve({ have, need, error }),
    });
    sync.start();
  }), 10000, 'negentropy sync');
}

const sameSet = (set, events) => set.size === events.length && events.every((ev) => set.has(ev.id));

/** Sends raw frames on a plain socket; resolves the first answer for `subid` (or null after `ms`). */
function raw(frames, subid, ms = 1500) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    const done = (answer) => { clearTimeout(timer); ws.close(); resolve(answer); };
    const timer = setTimeout(() => done(null), ms);
    ws.on('open', () => frames.forEach((f) => ws.send(JSON.stringify(f))));
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      if (msg[1] === subid || msg[0] === 'NOTICE') done(msg);
    });
  });
}

try {
  const relay = await withTimeout(Relay.connect(url), 5000, 'connect');
  for (const ev of [...both, ...relayOnly, ...padding]) await relay.publish(ev);

  const first = await reconcile(relay, [...both, ...clientOnly]);
  check('sync ends without error', !first.error, String(first.error));
  check('need = the relay-only events', sameSet(first.need, relayOnly), `${first.need.size} ids`);
  check('have = the client-only events', sameSet(first.have, clientOnly), `${first.have.size} ids`);

  // Down and up, then both sides are equal: one round, nothing to do.
  const fetched = await collect(relay, [{ ids: [...first.need] }]);
  check('needed ids download', fetched.length === relayOnly.length, `${fetched.length}`);
  for (const ev of clientOnly) await relay.publish(ev);
  const again = await reconcile(relay, [...both, ...clientOnly, ...fetched]);
  check('after down+up nothing differs', !again.error && again.have.size === 0 && again.need.size === 0,
    `${again.have.size}/${again.need.size} ${again.error}`);

  const unknown = await raw([['NEG-MSG', 'nobody', '61']], 'nobody');
  check('unknown subid -> NEG-ERR closed:', unknown?.[0] === 'NEG-ERR' && unknown[2].startsWith('closed:'),
    JSON.stringify(unknown));
  const version = await raw([['NEG-OPEN', 'v', { '#t': [tag] }, '62aabbccddeeff']], 'v');
  check('other protocol version -> NEG-MSG 61', version?.[0] === 'NEG-MSG' && version[2] === '61',
    JSON.stringify(version));
  const truncated = await raw([['NEG-OPEN', 't', { '#t': [tag] }, '610000']], 't');
  check('truncated message -> NEG-ERR invalid:', truncated?.[0] === 'NEG-ERR' && truncated[2].startsWith('invalid:'),
    JSON.stringify(truncated));
  const closedAfterError = await raw([['NEG-OPEN', 't', { '#t': [tag] }, '610000'], ['NEG-MSG', 't', '61']], 't', 1500);
  check('the subid is gone after NEG-ERR', closedAfterError?.[0] === 'NEG-ERR', JSON.stringify(closedAfterError));
  const quiet = await raw([['NEG-CLOSE', 'nothing']], 'nothing', 500);
  check('NEG-CLOSE gets no reply', quiet === null, JSON.stringify(quiet));
  const array = await raw([['NEG-OPEN', 'a', [{ '#t': [tag] }], '6100000200']], 'a');
  check('a filter array is refused with NEG-ERR', array?.[0] === 'NEG-ERR', JSON.stringify(array));
  const blocked = await raw([['NEG-OPEN', 'b', {}, '6100000200']], 'b');
  check('more than the cap -> NEG-ERR blocked: with the cap',
    blocked?.[0] === 'NEG-ERR' && blocked[2] === 'blocked: too many query results' && blocked[3] === cap,
    JSON.stringify(blocked));
  relay.close();
} catch (e) {
  check('no exception', false, e.stack || String(e));
}
finish();
