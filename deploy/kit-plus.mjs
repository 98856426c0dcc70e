// Cluster kit mode `plus` (GRASP-03 Sync+ at scale): one graspd node hosts R repositories and T
// issue threads; A eligible authors (R owners + the participants who opened the issues) keep their
// NIP-65 relay lists and profiles on a user-index relay and their mailboxes on L relays, all served
// by one MultiRelay (deploy/kit-relays.mjs). Every thread has one reply found nowhere but a
// mailbox: even threads a follow-up by the issue's author in that author's two write outboxes, odd
// threads a reply by another participant in its own outbox and the issue author's read inbox.
// Measured: time until the node stores every reply, peak and steady connections, resident memory
// and the REQs sent to the index relay.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MultiRelay } from './kit-relays.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'tests/interop/package.json'));
const { generateSecretKey, getPublicKey } = require('nostr-tools/pure');

const mailbox = (i, relays) => `/r${i % relays}`;

/** Where participant `k` writes (two outboxes) and reads (one inbox). */
function participantRelays(k, relays) {
  return { write: [mailbox(2 * k, relays), mailbox(2 * k + 1, relays)], read: [mailbox(2 * k + 7, relays)] };
}

/** Every event of the world, signed for a hub and a node on the given ports. */
function buildWorld(kit, sizes, hubPort, nodePort) {
  const { repos, threads, authors, relays } = sizes;
  const participants = authors - repos;
  if (participants < 2 || threads < participants) {
    throw new Error('plus needs --authors > --repos + 1 and --issues >= --authors - --repos');
  }
  const hub = (path) => `ws://127.0.0.1:${hubPort}${path}`;
  const owners = Array.from({ length: repos }, () => generateSecretKey());
  const people = Array.from({ length: participants }, () => generateSecretKey());
  const at = Math.floor(Date.now() / 1000) - 7200;
  const hosted = [];     // published to the node
  const index = [];      // relay lists and profiles, on the index relay
  const mailboxes = [];  // [path, event]: the replies, on mailbox relays only
  owners.forEach((owner, i) => {
    hosted.push(kit.announcement(owner, `plus-${i}`, [nodePort], at));
    index.push(kit.sign(owner, 10002, [['r', hub(mailbox(i, relays))]], '', at));
    index.push(kit.sign(owner, 0, [], JSON.stringify({ name: `owner ${i}` }), at));
  });
  people.forEach((person, k) => {
    const { write, read } = participantRelays(k, relays);
    const tags = [...write.map((p) => ['r', hub(p), 'write']), ...read.map((p) => ['r', hub(p), 'read'])];
    index.push(kit.sign(person, 10002, tags, '', at));
    index.push(kit.sign(person, 0, [], JSON.stringify({ name: `participant ${k}` }), at));
  });
  for (let j = 0; j < threads; j++) {
    const owner = owners[j % repos];
    const k = j % participants;
    const issue = kit.sign(people[k], 1621, [['a', `30617:${getPublicKey(owner)}:plus-${j % repos}`],
      ['p', getPublicKey(owner)], ['subject', `thread ${j}`]], `issue ${j}`, at + 10);
    hosted.push(issue);
    const replier = j % 2 === 0 ? k : (k + 1) % participants;
    const reply = kit.sign(people[replier], 1111,
      [['E', issue.id, '', issue.pubkey], ['K', '1621'], ['P', issue.pubkey],
       ['e', issue.id, '', issue.pubkey], ['k', '1621'], ['p', issue.pubkey]], `reply in thread ${j}`, at + 20);
    for (const path of participantRelays(replier, relays).write) mailboxes.push([path, reply]);
    if (replier !== k) for (const path of participantRelays(k, relays).read) mailboxes.push([path, reply]);
  }
  return { sizes, hubPort, nodePort, hosted, index, mailboxes };
}

/** Signing ~30,000 events takes minutes: --events-cache keeps them with the two ports they name. */
async function world(kit, sizes) {
  const cache = kit.opt.events_cache;
  if (cache && existsSync(cache)) {
    const cached = JSON.parse(readFileSync(cache, 'utf8'));
    if (JSON.stringify(cached.sizes) === JSON.stringify(sizes)) {
      kit.log(`reusing signed events from ${cache}`);
      return cached;
    }
    kit.log(`${cache} holds another world (${JSON.stringify(cached.sizes)}): signing anew`);
  }
  kit.log('signing events (--events-cache FILE keeps them for the next run)');
  const w = buildWorld(kit, sizes, await kit.freePort(), await kit.freePort());
  if (cache) writeFileSync(cache, JSON.stringify(w));
  return w;
}

/** Samples the node's resident memory and the hub's open connections until stopped. */
function sampler(kit, node, hub) {
  const s = { rssPeak: 0, rss: 0, timer: null };
  const tick = () => {
    try { s.rss = kit.rssBytes(node.pid); s.rssPeak = Math.max(s.rssPeak, s.rss); } catch {}
  };
  tick();
  s.timer = setInterval(tick, 500);
  s.stop = () => clearInterval(s.timer);
  return s;
}

const mib = (b) => `${(b / 1048576).toFixed(1)} MiB`;

/** Waits until the hub's open connections stay unchanged for `quietMs` (or `maxMs` passes). */
async function steadyConnections(kit, hub, quietMs, maxMs) {
  const until = Date.now() + maxMs;
  let last = hub.open;
  let since = Date.now();
  while (Date.now() < until && Date.now() - since < quietMs) {
    await kit.sleep(500);
    if (hub.open !== last) { last = hub.open; since = Date.now(); }
  }
  return hub.open;
}

export async function plus(kit) {
  const { opt, log } = kit;
  const sizes = { repos: opt.repos, threads: opt.issues, authors: opt.authors, relays: opt.relays };
  const w = await world(kit, sizes);
  const hub = await new MultiRelay().listen(w.hubPort);
  for (const ev of w.index) hub.at('/index').add(ev);
  for (const [path, ev] of w.mailboxes) hub.at(path).add(ev);
  log(`${w.hosted.length} events for the node, ${w.index.length} on the index, ` +
      `${w.mailboxes.length} reply copies on ${opt.relays} mailbox relays`);

  const node = await kit.startNode('plus', w.nodePort, {
    NGIT_SYNC_PLUS_ENABLED: 'true',
    NGIT_SYNC_PLUS_USER_INDEX_RELAYS: hub.url('/index'),
    NGIT_SYNC_PLUS_RECONCILE_SECS: String(opt.reconcile),
    NGIT_MAX_SUBSCRIPTION_VALUES: '1000000',
  });
  const memory = sampler(kit, node, hub);
  const c = new kit.Conn(node.port);
  await c.open();
  const t0 = Date.now();
  const { refused } = await kit.publishAll(c, w.hosted);
  if (refused.length) throw new Error(`node refused ${refused.length}: ${refused[0]}`);
  const published = Date.now() - t0;
  log(`published ${w.hosted.length} events in ${published} ms; waiting for ${opt.issues} replies`);

  let found = 0;
  let lastLog = 0;
  await kit.waitFor('every reply', async () => {
    found = await c.count([{ kinds: [1111] }]);
    if (Date.now() - lastLog > 10000) { lastLog = Date.now(); log(`${found} replies after ${Date.now() - t0} ms, ${hub.open} connections`); }
    return found >= opt.issues;
  }, opt.timeout * 1000, 250);
  const allFound = Date.now() - t0;
  const peakAtFound = hub.peak;
  const identities = await c.count([{ kinds: [0, 10002] }]);
  const steady = await steadyConnections(kit, hub, 15000, 180000);
  memory.stop();
  console.log(`plus: ${opt.repos} repositories, ${opt.issues} threads, ${opt.authors} eligible authors, ${opt.relays} mailbox relays, reconcile ${opt.reconcile} s`);
  console.log(`every reply stored (${found}) ${allFound} ms after the first publish (publishing took ${published} ms)`);
  console.log(`identity events stored ${identities} of ${w.index.length}`);
  console.log(`connections to the relays: peak ${hub.peak} (${peakAtFound} when the last reply arrived), steady ${steady}`);
  console.log(`resident memory: peak ${mib(memory.rssPeak)}, end ${mib(memory.rss)}`);
  console.log(`REQs sent to the index relay: ${hub.reqsAt('/index')}`);
  c.close();
  hub.close();
  return 0;
}
