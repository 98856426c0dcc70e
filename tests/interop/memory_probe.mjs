// Resident memory of graspd under two large transient loads (docs/benchmarks.md, "Memory under
// large events"); an on-demand measurement, not part of ctest.
//
//   node tests/interop/memory_probe.mjs fanout --binary build/default/graspd
//       one 500 KB event delivered live to 1,000 subscriptions (20 connections x 50) whose
//       clients have stopped reading
//   node tests/interop/memory_probe.mjs req --binary build/default/graspd
//       one REQ answered with 300 stored events of 400 KB (graspd restarted after storing them)
//
// Prints one JSON line, in MiB: the anonymous resident memory (RssAnon: heap and stacks; the LMDB
// map's pages are file-backed and not in it) before the load, its peak (sampled every 10 ms) and
// 6 s later (after the process monitor's next sample), the same for VmRSS (peak = VmHWM), plus
// what the clients received.
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, 'package.json'));
const WebSocket = require('ws');
const { generateSecretKey, finalizeEvent } = require('nostr-tools/pure');

const argv = process.argv.slice(2);
const mode = argv.shift();
const opt = { binary: '', connections: 20, subscriptions: 50, events: 300, event_kb: 400, fanout_kb: 500,
              compression: 0 };
for (let i = 0; i < argv.length; i++) {
  const key = argv[i].replace(/^--/, '').replace(/-/g, '_');
  if (!(key in opt)) { console.error(`unknown option ${argv[i]}`); process.exit(2); }
  opt[key] = typeof opt[key] === 'number' ? Number(argv[++i]) : argv[++i];
}
if (!opt.binary || !['fanout', 'req'].includes(mode)) {
  console.error('usage: memory_probe.mjs fanout|req --binary PATH');
  process.exit(2);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'graspd-memory-'));
let child = null;
process.on('exit', () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function start(port) {
  child = spawn(opt.binary, [], {
    env: {
      ...process.env,
      NGIT_BIND_ADDRESS: `127.0.0.1:${port}`,
      NGIT_RELAY_DATA_PATH: join(dir, 'relay'),
      NGIT_RELAY_OWNER_NSEC_FILE: join(dir, 'relay-owner.nsec'),
      NGIT_ACCEPTANCE_POLICY: 'open',
      NGIT_SYNC_ENABLED: 'false',
      NGIT_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const until = Date.now() + 20000;
  for (;;) {
    try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) return; } catch {}
    if (Date.now() > until) throw new Error('graspd not ready within 20 s');
    await sleep(50);
  }
}

async function stopGraspd() {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** VmRSS, VmHWM and RssAnon (the heap and stacks, without the LMDB map's file pages), in MiB. */
function memory() {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const field = (name) => Number(status.match(new RegExp(`${name}:\\s+(\\d+) kB`))[1]) / 1024;
  return { rss: field('VmRSS'), hwm: field('VmHWM'), anon: field('RssAnon') };
}

/** Samples RssAnon every 10 ms until stop() and returns the highest value seen. */
function watchAnon() {
  let peak = memory().anon;
  const timer = setInterval(() => { peak = Math.max(peak, memory().anon); }, 10);
  return () => { clearInterval(timer); return Math.max(peak, memory().anon); };
}

/** The value of an unlabelled counter on /metrics. */
async function metric(port, name) {
  const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

function connect(port) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { perMessageDeflate: opt.compression !== 0, maxPayload: 0 });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** Sends `frames` and resolves once `count` messages satisfied `pred`. */
function exchange(ws, frames, pred, count) {
  return new Promise((resolve) => {
    let seen = 0;
    const on = (data) => {
      if (pred(JSON.parse(data.toString())) && ++seen === count) { ws.off('message', on); resolve(); }
    };
    ws.on('message', on);
    for (const f of frames) ws.send(JSON.stringify(f));
  });
}

function bigEvent(key, kb, createdAt) {
  return finalizeEvent({ kind: 1, created_at: createdAt, tags: [], content: 'x'.repeat(kb * 1000) }, key);
}

async function fanout(port) {
  await start(port);
  const readers = [];
  for (let c = 0; c < opt.connections; c++) {
    const ws = await connect(port);
    const reqs = [];
    for (let s = 0; s < opt.subscriptions; s++) reqs.push(['REQ', `s${s}`, { kinds: [1], limit: 0 }]);
    await exchange(ws, reqs, (m) => m[0] === 'EOSE', opt.subscriptions);
    ws._socket.pause();  // the client stops reading: every frame for it stays queued in graspd
    readers.push(ws);
  }
  const publisher = await connect(port);
  await sleep(500);
  const before = memory();
  const stop = watchAnon();
  const ev = bigEvent(generateSecretKey(), opt.fanout_kb, Math.floor(Date.now() / 1000));
  await exchange(publisher, [['EVENT', ev]], (m) => m[0] === 'OK', 1);
  await sleep(1000);
  const peak = { ...memory(), anon: stop() };
  await sleep(6000);
  const after = memory();
  const disconnected = await metric(port, 'graspd_relay_slow_reader_disconnects_total');
  return { before, peak, after, extra: { deliveries: opt.connections * opt.subscriptions, disconnected } };
}

async function req(port) {
  await start(port);
  const key = generateSecretKey();
  const publisher = await connect(port);
  const now = Math.floor(Date.now() / 1000);
  for (let i = 0; i < opt.events; i += 20) {
    const batch = [];
    for (let j = i; j < Math.min(i + 20, opt.events); j++)
      batch.push(['EVENT', bigEvent(key, opt.event_kb, now - opt.events + j)]);
    await exchange(publisher, batch, (m) => m[0] === 'OK' && m[2] === true, batch.length);
  }
  publisher.close();
  await stopGraspd();
  await start(port);  // a fresh process: the baseline holds none of the publishing
  await sleep(500);
  const before = memory();
  const stop = watchAnon();
  const reader = await connect(port);
  let received = 0;
  const done = new Promise((resolve) => {
    reader.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (m[0] === 'EVENT') received++;
      if (m[0] === 'EOSE') resolve('eose');
    });
    reader.on('close', () => resolve('closed'));
  });
  reader.send(JSON.stringify(['REQ', 'big', { kinds: [1], limit: opt.events }]));
  const ending = await Promise.race([done, sleep(60000).then(() => 'timeout')]);
  await sleep(1000);
  const peak = { ...memory(), anon: stop() };
  await sleep(6000);
  const after = memory();
  return { before, peak, after, extra: { events: opt.events, received, ending } };
}

const port = await freePort();
const result = mode === 'fanout' ? await fanout(port) : await req(port);
const mib = (x) => Math.round(x);
console.log(JSON.stringify({
  mode,
  anon_before_mib: mib(result.before.anon),
  anon_peak_mib: mib(result.peak.anon),
  anon_after_6s_mib: mib(result.after.anon),
  rss_before_mib: mib(result.before.rss),
  rss_peak_mib: mib(result.peak.hwm),
  rss_after_6s_mib: mib(result.after.rss),
  ...result.extra,
}));
process.exit(0);
