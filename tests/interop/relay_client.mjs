// nostr-tools as a real third-party client of a running graspd (used by
// tests/integration/relay_interop_test.cpp). Usage: node relay_client.mjs ws://127.0.0.1:PORT
// Publishes, queries, subscribes live, counts and closes; prints one line per
// check ("ok <name>" or "fail <name>: <why>") and exits 0 only if all passed.
import WebSocket from 'ws';
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay';
import { generateSecretKey, getPublicKey, finalizeEvent, verifyEvent } from 'nostr-tools/pure';
import { check, withTimeout, collect, finish } from './harness.mjs';

useWebSocketImplementation(WebSocket);

const url = process.argv[2];
const sk = generateSecretKey();
const pk = getPublicKey(sk);
const now = Math.floor(Date.now() / 1000);
const tricky = 'tricky \u000b\u001f "quotes" \\ / \u2028 😀 é';

try {
  const publisher = await withTimeout(Relay.connect(url), 5000, 'connect publisher');
  const subscriber = await withTimeout(Relay.connect(url), 5000, 'connect subscriber');

  const first = finalizeEvent({ kind: 1, created_at: now - 10, tags: [['t', 'interop']], content: tricky }, sk);
  const reason = await withTimeout(publisher.publish(first), 5000, 'publish');
  check('publish accepted', true, reason);

  let dupMessage = '';
  try { dupMessage = await publisher.publish(first); } catch (e) { dupMessage = 'rejected: ' + e.message; }
  check('duplicate answered OK true with duplicate:', dupMessage.startsWith('duplicate:'), dupMessage);

  const bad = { ...finalizeEvent({ kind: 1, created_at: now, tags: [], content: 'x' }, sk) };
  bad.content = 'tampered';
  let badMessage = '';
  try { await publisher.publish(bad); badMessage = 'accepted'; } catch (e) { badMessage = e.message; }
  check('tampered event refused with invalid:', badMessage.startsWith('invalid:'), badMessage);

  const stored = await collect(publisher, [{ authors: [pk], '#t': ['interop'] }]);
  check('query returns the stored event', stored.length === 1 && stored[0].id === first.id, JSON.stringify(stored));
  check('stored event verifies with nostr-tools', stored.length === 1 && verifyEvent(stored[0]));
  check('content round-trips byte for byte', stored.length === 1 && stored[0].content === tricky);

  // Live subscription: EOSE first, then the new event, then nothing after close.
  const live = [];
  let eose = false;
  const liveSub = subscriber.subscribe([{ kinds: [1], authors: [pk] }], {
    onevent: (ev) => live.push({ ev, afterEose: eose }),
    oneose: () => { eose = true; },
  });
  await withTimeout(new Promise((r) => { const t = setInterval(() => { if (eose) { clearInterval(t); r(); } }, 10); }), 5000, 'eose');
  const second = finalizeEvent({ kind: 1, created_at: now, tags: [], content: 'live' }, sk);
  await publisher.publish(second);
  await withTimeout(new Promise((r) => { const t = setInterval(() => { if (live.some((x) => x.ev.id === second.id)) { clearInterval(t); r(); } }, 10); }), 5000, 'live event');
  check('live event delivered after EOSE', live.some((x) => x.ev.id === second.id && x.afterEose));
  liveSub.close();
  await new Promise((r) => setTimeout(r, 200));
  const third = finalizeEvent({ kind: 1, created_at: now + 1, tags: [], content: 'after close' }, sk);
  await publisher.publish(third);
  await new Promise((r) => setTimeout(r, 300));
  check('closed subscription gets nothing more', !live.some((x) => x.ev.id === third.id));

  const count = await withTimeout(publisher.count([{ kinds: [1], authors: [pk] }], {}), 5000, 'count');
  check('COUNT (NIP-45)', count === 3, String(count));

  publisher.close();
  subscriber.close();
} catch (e) {
  check('run', false, e.message);
}
finish();
