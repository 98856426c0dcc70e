// Publishing throughput as a Node `ws` client sees it (the library nostr-tools runs on), over 1 or
// more sockets at once; speaks to any relay URL (graspd, strfry, ...). A benchmark, not part of ctest.
//
//   node tests/load/ws_publish_bench.mjs --url ws://127.0.0.1:7395 --events 20000 --connections 4 \
//       [--content-bytes 500] [--window 500] [--deflate 0|1] [--pid RELAY_PID] [--cache FILE]
//       [--repo NAME]
//
// The events (kind 1, `content-bytes` of content, ~600 bytes of JSON at 500) are signed beforehand
// (minutes for large counts: `--cache FILE` keeps them as one JSON array and reuses them; a relay
// must not have seen them before, so point each run at a fresh store). Connection i sends events
// i, i+N, i+2N, ... keeping at most `window` unanswered, all connections at once; the clock runs from
// the first send to the last OK. Prints one JSON line: events/s, accepted, refused (with the first
// refusal's message), the client's own CPU time per event (µs: on a 2-core machine the client
// competes with the relay) and with --pid the relay's CPU time per accepted event (µs, /proc).
//
// --repo NAME takes the GRASP-01 path a git client takes instead: before the clock starts, one
// socket publishes an announcement of repository NAME (kind 30617) whose clone URL and relay are
// the relay under test (start graspd with NGIT_PURGATORY_ENABLED=false so it is accepted without a
// push); the events are then issues (kind 1621) tagging that repository, by the same author.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseOptions, requireInterop, cpuMs } from './bench_common.mjs';

const WebSocket = requireInterop('ws');
const { generateSecretKey, finalizeEvent } = requireInterop('nostr-tools/pure');

const opt = parseOptions(
  { url: '', events: 20000, connections: 1, 'content-bytes': 500, window: 500, deflate: 0, pid: 0, cache: '',
    repo: '' },
  'usage: ws_publish_bench.mjs --url ws://HOST:PORT [--events N] [--connections N] ' +
    '[--content-bytes N] [--window N] [--deflate 0|1] [--pid RELAY_PID] [--cache FILE] [--repo NAME]');
const { getPublicKey } = requireInterop('nostr-tools/pure');
const { npubEncode } = requireInterop('nostr-tools/nip19');

// The announcement of --repo NAME on the relay under test (the author's clone URL there).
function announcement(sk, now) {
  const http = opt.url.replace(/^ws/, 'http').replace(/\/$/, '');
  const tags = [['d', opt.repo], ['clone', `${http}/${npubEncode(getPublicKey(sk))}/${opt.repo}.git`],
    ['relays', opt.url]];
  return finalizeEvent({ kind: 30617, created_at: now - 7200, tags, content: '' }, sk);
}

// [announcement or null, events]; a cache is only reused for the same --repo.
function signedEvents() {
  if (opt.cache && existsSync(opt.cache)) {
    const cached = JSON.parse(readFileSync(opt.cache, 'utf8'));
    if (cached.repo === opt.repo && cached.events.length >= opt.events)
      return [cached.announcement, cached.events.slice(0, opt.events)];
  }
  const sk = generateSecretKey();
  const now = Math.floor(Date.now() / 1000);
  const filler = 'x'.repeat(Math.max(0, opt['content-bytes'] - 16));
  const repo = opt.repo ? announcement(sk, now) : null;
  const address = repo && `30617:${repo.pubkey}:${opt.repo}`;
  const events = [];
  for (let n = 0; n < opt.events; n++) {
    const content = `${n} ${filler}`;
    events.push(repo
      ? finalizeEvent({ kind: 1621, created_at: now - (n % 3600), tags: [['a', address], ['subject', `issue ${n}`]], content }, sk)
      : finalizeEvent({ kind: 1, created_at: now - (n % 3600), tags: [], content }, sk));
  }
  if (opt.cache) writeFileSync(opt.cache, JSON.stringify({ repo: opt.repo, announcement: repo, events }));
  return [repo, events];
}

const [repoAnnouncement, signed] = signedEvents();
const frames = signed.map((e) => JSON.stringify(['EVENT', e]));

async function open() {
  const ws = new WebSocket(opt.url, { perMessageDeflate: opt.deflate !== 0 });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  return ws;
}

// Publishes the repository's announcement; throws unless it is accepted.
function announce(ws, event) {
  return new Promise((resolve, reject) => {
    ws.once('message', (data) => {
      const msg = JSON.parse(data.toString());
      if (msg[0] === 'OK' && msg[2]) resolve();
      else reject(new Error(`announcement refused: ${data}`));
    });
    ws.send(JSON.stringify(['EVENT', event]));
  });
}

// Sends its share of `frames` with at most `window` unanswered; resolves with its counts.
function publish(ws, index) {
  const mine = [];
  for (let n = index; n < frames.length; n += opt.connections) mine.push(frames[n]);
  return new Promise((resolve) => {
    let sent = 0;
    let answered = 0;
    const counts = { accepted: 0, refused: 0, firstRefusal: null };
    const fill = () => {
      while (sent < mine.length && sent - answered < opt.window) ws.send(mine[sent++]);
    };
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      if (msg[0] !== 'OK') return;
      answered++;
      if (msg[2]) counts.accepted++;
      else {
        counts.refused++;
        counts.firstRefusal ??= msg[3];
      }
      if (answered === mine.length) resolve(counts);
      else fill();
    });
    if (mine.length === 0) resolve(counts);
    fill();
  });
}

const sockets = await Promise.all(Array.from({ length: opt.connections }, open));
if (repoAnnouncement) await announce(sockets[0], repoAnnouncement);
const cpu0 = opt.pid ? cpuMs(opt.pid) : 0;
const client0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
const results = await Promise.all(sockets.map(publish));
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu1 = opt.pid ? cpuMs(opt.pid) : 0;
const client = process.cpuUsage(client0);
for (const ws of sockets) ws.close();

const accepted = results.reduce((s, r) => s + r.accepted, 0);
const refused = results.reduce((s, r) => s + r.refused, 0);
console.log(JSON.stringify({
  url: opt.url, connections: opt.connections, events: frames.length, accepted, refused,
  first_refusal: results.find((r) => r.firstRefusal)?.firstRefusal ?? null,
  events_per_s: Math.round(frames.length / seconds),
  server_cpu_us_per_event: opt.pid && accepted ? Math.round(((cpu1 - cpu0) * 1000) / accepted) : null,
  client_cpu_us_per_event: Math.round((client.user + client.system) / frames.length),
}));
