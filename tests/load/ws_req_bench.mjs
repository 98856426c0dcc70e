// REQ latency as a Node `ws` client sees it (the library nostr-tools runs on), with or without
// permessage-deflate; speaks to any relay URL (graspd, strfry, ...). A benchmark, not part of ctest.
//
//   node tests/load/ws_req_bench.mjs --url ws://127.0.0.1:7395 --requests 200 \
//       --filter '{"kinds":[1],"limit":500}' --deflate 1 [--pid RELAY_PID]
//
// Sends one REQ at a time and waits for its EOSE. Prints one JSON line: the latency percentiles
// (REQ sent -> EOSE received, ms), events per REQ, and with --pid the relay's CPU time per REQ (ms,
// utime + stime from /proc/PID/stat over the run). The store is filled beforehand, for example with
// `graspd-load publish --port P --events 20000 --kind 1 --content-bytes 500` (~600-byte events).
import { parseOptions, requireInterop, cpuMs } from './bench_common.mjs';

const WebSocket = requireInterop('ws');

const opt = parseOptions(
  { url: '', requests: 200, filter: '{"kinds":[1],"limit":500}', deflate: 1, pid: 0, warmup: 10 },
  'usage: ws_req_bench.mjs --url ws://HOST:PORT [--requests N] [--filter JSON] ' +
    '[--deflate 0|1] [--pid RELAY_PID] [--warmup N]');
const filter = JSON.parse(opt.filter);

const ws = new WebSocket(opt.url, { perMessageDeflate: opt.deflate !== 0 });
await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
const negotiated = (ws.extensions || '').includes('permessage-deflate');

let pending = null;
ws.on('message', (data) => {
  const text = data.toString();
  if (!pending) return;
  if (text.startsWith('["EVENT"')) {
    pending.events++;
  } else if (text.startsWith('["EOSE"') || text.startsWith('["CLOSED"')) {
    const done = pending;
    pending = null;
    done.resolve(done.events);
  }
});

function req(n) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    pending = { events: 0, resolve: (events) => resolve({ events, ms: Number(process.hrtime.bigint() - t0) / 1e6 }) };
    ws.send(JSON.stringify(['REQ', `b${n}`, filter]));
  });
}

for (let i = 0; i < opt.warmup; i++) {
  await req(`w${i}`);
  ws.send(JSON.stringify(['CLOSE', `bw${i}`]));
}
const cpu0 = opt.pid ? cpuMs(opt.pid) : 0;
const latencies = [];
let events = 0;
for (let i = 0; i < opt.requests; i++) {
  const r = await req(i);
  latencies.push(r.ms);
  events += r.events;
  ws.send(JSON.stringify(['CLOSE', `b${i}`]));
}
const cpu1 = opt.pid ? cpuMs(opt.pid) : 0;
ws.close();

latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
const round = (x) => Math.round(x * 100) / 100;
console.log(JSON.stringify({
  url: opt.url, deflate: negotiated, extensions: ws.extensions || '', requests: opt.requests,
  events_per_req: events / opt.requests, p50_ms: round(pct(50)), p90_ms: round(pct(90)),
  p99_ms: round(pct(99)), server_cpu_ms_per_req: opt.pid ? round((cpu1 - cpu0) / opt.requests) : null,
}));
