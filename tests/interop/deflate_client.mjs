// `ws` clients that negotiate permessage-deflate in every way browsers and libraries do, against a
// running graspd (used by tests/integration/relay_interop_test.cpp). Usage:
//   node deflate_client.mjs ws://127.0.0.1:PORT
// Publishes events of several sizes (compressed by the client when large), then for each client
// configuration reads them back twice with a REQ (the second answer comes from graspd's cache of
// compressed events), and receives one live event; every event must arrive byte-identical and
// verify. Prints "ok <check>" / "fail <check>: <why>" lines and exits 0 only if all passed.
import WebSocket from 'ws';
import { generateSecretKey, finalizeEvent, verifyEvent } from 'nostr-tools/pure';
import { check, withTimeout, finish } from './harness.mjs';

const url = process.argv[2];
const sk = generateSecretKey();
const now = Math.floor(Date.now() / 1000);

const clients = {
  'no compression': false,
  'deflate, context takeover both ways': { threshold: 0 },
  'deflate, no context takeover': { threshold: 0, serverNoContextTakeover: true, clientNoContextTakeover: true },
  'deflate, server window 9 bits': { threshold: 0, serverMaxWindowBits: 9 },
  'deflate, client window 10 bits': { threshold: 0, clientMaxWindowBits: 10 },
};

function open(perMessageDeflate) {
  return withTimeout(new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  }), 5000, 'connect');
}

/// Sends `message` and collects the frames until `done(frame)` says so.
function exchange(ws, message, done) {
  return withTimeout(new Promise((resolve) => {
    const frames = [];
    const onMessage = (data) => {
      const frame = JSON.parse(data.toString());
      frames.push(frame);
      if (done(frame)) {
        ws.off('message', onMessage);
        resolve(frames);
      }
    };
    ws.on('message', onMessage);
    if (message) ws.send(JSON.stringify(message));
  }), 10000, JSON.stringify(message).slice(0, 40));
}

// Small, medium, large (past 2^9 and 2^15 bytes: window handling) and repetitive contents.
const words = 'grasp nostr relay patch issue commit branch merge '.split(' ');
const events = [];
for (let i = 0; i < 30; i++) {
  const size = [10, 300, 700, 2000, 40000, 70000][i % 6];
  let content = '';
  while (content.length < size) content += words[(content.length * 7 + i) % words.length] + ' ';
  if (i % 4 === 0) content += ` é 😀 "q" \\ ${i}`;
  events.push(finalizeEvent({ kind: 1, created_at: now - i, tags: [['t', 'deflate']], content }, sk));
}
const byId = new Map(events.map((e) => [e.id, e]));
const fields = ['id', 'pubkey', 'created_at', 'kind', 'tags', 'content', 'sig'];
const same = (a, b) => !!a && !!b && fields.every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));

try {
  const publisher = await open({ threshold: 0 });
  for (const ev of events) {
    const [ok] = await exchange(publisher, ['EVENT', ev], (f) => f[0] === 'OK');
    if (!ok[2]) check(`publish ${ev.id.slice(0, 8)}`, false, JSON.stringify(ok));
  }
  check('every event accepted over a compressing connection', true);

  for (const [name, pmd] of Object.entries(clients)) {
    const ws = await open(pmd);
    check(`${name}: negotiated as asked`, (ws.extensions || '').includes('permessage-deflate') === (pmd !== false),
          ws.extensions);
    for (const round of ['first', 'cached']) {
      const frames = await exchange(ws, ['REQ', `q-${round}`, { '#t': ['deflate'] }], (f) => f[0] === 'EOSE');
      const got = frames.filter((f) => f[0] === 'EVENT').map((f) => f[2]);
      const intact = got.every((ev) => same(ev, byId.get(ev.id)) &&
                                       verifyEvent(ev));
      check(`${name}: ${round} REQ returns every event intact`, got.length === events.length && intact,
            `${got.length} of ${events.length}`);
      ws.send(JSON.stringify(['CLOSE', `q-${round}`]));
    }
    await exchange(ws, ['REQ', 'live', { kinds: [1], '#t': ['live'], since: now - 5 }], (f) => f[0] === 'EOSE');
    const live = finalizeEvent({ kind: 1, created_at: now, tags: [['t', 'live']], content: `${name} `.repeat(50) }, sk);
    const delivered = exchange(ws, null, (f) => f[0] === 'EVENT');
    await exchange(publisher, ['EVENT', live], (f) => f[0] === 'OK');
    const [frame] = await delivered;
    check(`${name}: live event intact`, same(frame[2], live));
    ws.close();
  }
  publisher.close();
} catch (e) {
  check('run', false, e.message);
}
finish();
