// Live fan-out with real subscribers: many `ws` connections holding many subscriptions while one
// publisher sends events at a fixed rate; delivery latency (publish sent -> EVENT received by a
// subscriber) and the relay's CPU. Speaks to any relay URL. A benchmark, not part of ctest.
//
//   node tests/load/ws_fanout_bench.mjs --url ws://127.0.0.1:7395 --clients 2000 --subscriptions 10000 \
//       --rate 500 --seconds 10 --matches 10 [--deflate 0|1] [--pid RELAY_PID]
//
// Subscription i filters on `#t: ["fan-<i>"]` (kinds 1, since now), spread round-robin over the clients;
// every event carries `--matches` distinct `t` tags, so it is delivered to that many subscriptions. The
// events are signed before the clock starts. Prints one JSON line: deliveries expected and received,
// latency p50/p90/p99/max (ms) and, with --pid, the relay's CPU (utime + stime) during the publishing.
import { parseOptions, requireInterop, cpuMs } from './bench_common.mjs';

const WebSocket = requireInterop('ws');
const { generateSecretKey, finalizeEvent } = requireInterop('nostr-tools/pure');

const opt = parseOptions(
  { url: '', clients: 2000, subscriptions: 10000, rate: 500, seconds: 10, matches: 10, deflate: 0, pid: 0 },
  'usage: ws_fanout_bench.mjs --url ws://HOST:PORT [--clients N] [--subscriptions N] [--rate N] ' +
    '[--seconds N] [--matches N] [--deflate 0|1] [--pid RELAY_PID]');

const now = () => Number(process.hrtime.bigint()) / 1e6;

// Sign everything first: the publisher must keep its rate.
const total = opt.rate * opt.seconds;
const sk = generateSecretKey();
const since = Math.floor(Date.now() / 1000) - 5;
const events = [];
for (let n = 0; n < total; n++) {
  const tags = [];
  for (let m = 0; m < opt.matches; m++) tags.push(['t', `fan-${(n * opt.matches + m) % opt.subscriptions}`]);
  events.push(finalizeEvent({ kind: 1, created_at: since + 5, tags, content: `fan-out ${n}` }, sk));
}

const sentAt = new Map();
const latencies = [];
let eose = 0;
function connect() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(opt.url, { perMessageDeflate: opt.deflate !== 0 });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.on('message', (data) => {
      const text = data.toString();
      if (text.startsWith('["EOSE"')) { eose++; return; }
      if (!text.startsWith('["EVENT"')) return;
      const id = text.slice(text.indexOf('"id":"') + 6, text.indexOf('"id":"') + 70);
      const t0 = sentAt.get(id);
      if (t0 !== undefined) latencies.push(now() - t0);
    });
  });
}

const clients = [];
for (let c = 0; c < opt.clients; c += 100) {
  const batch = [];
  for (let k = c; k < Math.min(c + 100, opt.clients); k++) batch.push(connect());
  clients.push(...(await Promise.all(batch)));
}
for (let s = 0; s < opt.subscriptions; s++) {
  clients[s % clients.length].send(JSON.stringify(['REQ', `s${s}`, { kinds: [1], '#t': [`fan-${s}`], since }]));
}
while (eose < opt.subscriptions) await new Promise((r) => setTimeout(r, 20));

const publisher = await connect();
const cpu0 = opt.pid ? cpuMs(opt.pid) : 0;
const start = now();
for (let n = 0; n < total; n++) {
  const due = start + (n * 1000) / opt.rate;
  const wait = due - now();
  if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  sentAt.set(events[n].id, now());
  publisher.send(JSON.stringify(['EVENT', events[n]]));
}
const expected = total * opt.matches;
const deadline = now() + 10000;
while (latencies.length < expected && now() < deadline) await new Promise((r) => setTimeout(r, 20));
const cpu1 = opt.pid ? cpuMs(opt.pid) : 0;
const elapsed = (now() - start) / 1000;
for (const ws of [...clients, publisher]) ws.terminate();

latencies.sort((a, b) => a - b);
const pct = (p) => latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] : null;
const round = (x) => (x === null ? null : Math.round(x * 100) / 100);
console.log(JSON.stringify({
  url: opt.url, clients: opt.clients, subscriptions: opt.subscriptions, rate: opt.rate, events: total,
  deliveries_expected: expected, deliveries: latencies.length, p50_ms: round(pct(50)), p90_ms: round(pct(90)),
  p99_ms: round(pct(99)), max_ms: round(latencies[latencies.length - 1] ?? null),
  relay_cpu_percent_of_a_core: opt.pid ? round(((cpu1 - cpu0) / 1000 / elapsed) * 100) : null,
}));
process.exit(0);
