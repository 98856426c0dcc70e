// Clone benchmark of graspd's git hosting against `git http-backend` behind a CGI wrapper
// (tests/bench/git_cgi_server.mjs) on the same machine. Run through tests/bench/git_clone_bench.sh.
//
//   node tests/bench/git_clone_bench.mjs --binary build/default/graspd [--mb 50] [--reps 5]
//       [--clients 20] [--rounds 2] [--events 300] [--idle-reqs 200] [--probe-ms 50]
//       [--git-max-processes 32] [--keep 0]
//
// 1. Builds a deterministic repository: 50 commits editing a text file, every 5th adding
//    incompressible 1 MiB blobs (AES-CTR of zeros under a fixed key) until --mb MiB; same
//    commit ids on every run.
// 2. Hosts it in graspd as a user would: announcement, state, push (purgatory on: both events are
//    held until the push releases them), then --events issues (kind 1621) for the REQ probe. The
//    pushed bare repository is copied under the CGI server's GIT_PROJECT_ROOT, so both servers
//    serve the same files.
// 3. One clone at a time, alternating the servers, --reps times: wall time, server CPU.
//    --clients concurrent `git clone --no-checkout`, --rounds times per server, alternated:
//    total wall time, per-clone p50/max, server CPU, peak memory, and the latency of one REQ
//    (the issues, every --probe-ms) on graspd's WebSocket while they run, against idle.
// Server CPU = utime+stime+cutime+cstime of the server process from /proc/<pid>/stat: its own
// work plus its reaped git children (upload-pack, pack-objects; http-backend for the wrapper),
// read once no child is left.
import { spawn, spawnSync } from 'node:child_process';
import { createCipheriv, createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childrenCpuMs, cpuMs, parseOptions, percentile, procStat, requireInterop } from '../load/bench_common.mjs';

const WebSocket = requireInterop('ws');
const { finalizeEvent, getPublicKey } = requireInterop('nostr-tools/pure');
const { npubEncode } = requireInterop('nostr-tools/nip19');
const here = dirname(fileURLToPath(import.meta.url));

const usage =
  'usage: git_clone_bench.mjs --binary GRASPD [--mb N] [--reps N] [--clients N] [--rounds N] ' +
  '[--events N] [--idle-reqs N] [--probe-ms MS] [--git-max-processes N] [--keep 0|1]';
const opt = parseOptions(
  { binary: '', mb: 50, reps: 5, clients: 20, rounds: 2, events: 300, 'idle-reqs': 200, 'probe-ms': 50,
    'git-max-processes': 32, keep: 0 },
  usage);
if (!opt.binary) {
  console.error(usage);
  process.exit(2);
}

const work = mkdtempSync(join(process.env.GRASPD_BENCH_TMP || tmpdir(), 'git-clone-bench-'));
const children = [];
function cleanup() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  if (!opt.keep) rmSync(work, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();
const log = (...a) => console.error('[bench]', ...a);
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

// ---------- git ----------
const gitEnv = {
  PATH: process.env.PATH, HOME: join(work, 'home'), GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@example.org',
  GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@example.org',
};
function git(args, cwd = work, env = {}) {
  const r = spawnSync('git', args, { cwd, env: { ...gitEnv, ...env }, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}
/** Runs git without blocking the event loop; resolves with the exit code, wall ms and stderr. */
function gitAsync(args) {
  return new Promise((resolve) => {
    const t0 = now();
    const child = spawn('git', args, { cwd: work, env: gitEnv, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('close', (code) => resolve({ code, ms: now() - t0, stderr: stderr.trim() }));
  });
}

/** The source repository; returns its HEAD. Deterministic: fixed content, names and dates. */
function buildSource(dir) {
  mkdirSync(join(dir, 'data'), { recursive: true });
  git(['init', '-q', '-b', 'main', dir]);
  const random = createCipheriv('aes-128-ctr', Buffer.alloc(16, 7), Buffer.alloc(16, 0));
  const mib = Buffer.alloc(1 << 20);
  const perDataCommit = Math.max(1, Math.ceil(opt.mb / 10));
  let blobs = 0;
  for (let c = 1; c <= 50; c++) {
    appendFileSync(join(dir, 'NOTES.md'), `change ${c}: ${'history line '.repeat(c % 7 + 1)}\n`);
    for (let k = 0; c % 5 === 0 && k < perDataCommit && blobs < opt.mb; k++, blobs++) {
      writeFileSync(join(dir, 'data', `blob-${String(blobs).padStart(3, '0')}.bin`), random.update(mib));
    }
    const date = `@${1700000000 + c * 3600} +0000`;
    git(['add', '-A'], dir);
    git(['commit', '-q', '-m', `change ${c}`], dir, { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date });
  }
  return git(['rev-parse', 'HEAD'], dir);
}

// ---------- processes ----------
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

/** Starts a server process and waits until `ready()` is true. */
async function startProcess(name, command, args, env, ready) {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-20000); });
  // Servers run until the benchmark ends (its exit handler kills them without further events).
  child.on('exit', (code, signal) => {
    console.error(`[bench] error: ${name} exited (${signal || code}) during the run\n${stderr}`);
    process.exit(1);
  });
  const until = Date.now() + 20000;
  while (!(await ready().catch(() => false))) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}\n${stderr}`);
    if (Date.now() > until) throw new Error(`${name} not ready within 20 s\n${stderr}`);
    await sleep(50);
  }
  return child;
}
const answers = (url) => async () => (await fetch(url)).status < 500;

/** Parent pid -> child pids, from one pass over /proc (zombies included: not reaped yet). */
function processTree() {
  const tree = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const ppid = Number(procStat(name)[1]);
      if (!tree.has(ppid)) tree.set(ppid, []);
      tree.get(ppid).push(Number(name));
    } catch { /* exited meanwhile */ }
  }
  return tree;
}
/** Waits until `pid` has reaped every child, so cutime/cstime hold their CPU. */
async function settle(pid) {
  const until = Date.now() + 30000;
  while (processTree().has(pid)) {
    if (Date.now() > until) throw new Error(`children of ${pid} still running after 30 s`);
    await sleep(20);
  }
}
const serverCpu = (pid) => ({ self: cpuMs(pid), all: cpuMs(pid) + childrenCpuMs(pid) });
function rssBytes(pid) {
  try { return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * 4096; } catch { return 0; }
}
/** Resident memory of `pid` and all its descendants. */
function treeRssBytes(pid, tree = processTree()) {
  return rssBytes(pid) + (tree.get(pid) || []).reduce((sum, child) => sum + treeRssBytes(child, tree), 0);
}
const vmHwmBytes = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

// ---------- nostr ----------
const ownerKey = createHash('sha256').update('graspd git clone bench owner').digest();
const owner = getPublicKey(ownerKey);
const sign = (kind, tags, content, at) => finalizeEvent({ kind, created_at: at, tags, content }, ownerKey);

class Relay {
  constructor(url) { this.url = url; this.waiting = new Map(); this.n = 0; }
  open() {
    this.ws = new WebSocket(this.url, { perMessageDeflate: false });
    // graspd gone mid-run: stop here (the exit handler kills the rest) rather than wait forever.
    this.ws.on('close', () => {
      if (this.closing) return;
      // A moment for graspd's exit, if that is why, to be reported first.
      setTimeout(() => {
        console.error('[bench] error: graspd closed the WebSocket connection');
        process.exit(1);
      }, 1000);
    });
    this.ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      const w = this.waiting.get(msg[1]);
      if (!w) return;
      if (msg[0] === 'EVENT') w.events++;
      else { this.waiting.delete(msg[1]); w.resolve(msg); }
    });
    return new Promise((resolve, reject) => { this.ws.once('open', resolve); this.ws.once('error', reject); });
  }
  /** ["OK", id, accepted, message]. */
  publish(ev) {
    return new Promise((resolve) => { this.waiting.set(ev.id, { resolve }); this.ws.send(JSON.stringify(['EVENT', ev])); });
  }
  /** The number of stored events the filter returns (up to EOSE) and the round trip in ms. */
  async req(filter) {
    const id = `q${++this.n}`;
    const t0 = now();
    const w = { events: 0 };
    await new Promise((resolve) => { w.resolve = resolve; this.waiting.set(id, w); this.ws.send(JSON.stringify(['REQ', id, filter])); });
    this.ws.send(JSON.stringify(['CLOSE', id]));
    return { events: w.events, ms: now() - t0 };
  }
  close() {
    this.closing = true;
    this.ws.close();
  }
}

/** REQs of the issues every `everyMs` until stop() resolves with their latencies. */
function probe(relay, everyMs, count = Infinity) {
  const latencies = [];
  let stopped = false;
  const done = (async () => {
    while (!stopped && latencies.length < count) {
      const t0 = now();
      const r = await relay.req({ kinds: [1621], limit: 500 });
      if (r.events !== opt.events) throw new Error(`REQ returned ${r.events} events, not ${opt.events}`);
      latencies.push(r.ms);
      await sleep(Math.max(0, everyMs - (now() - t0)));
    }
    return latencies.sort((a, b) => a - b);
  })();
  return { done, stop: () => { stopped = true; return done; } };
}

// ---------- setup ----------
async function setup() {
  log(`work directory ${work}; load average ${loadavg()}`);
  mkdirSync(gitEnv.HOME, { recursive: true });
  let t0 = now();
  const head = buildSource(join(work, 'src'));
  log(`source repository built in ${((now() - t0) / 1000).toFixed(1)} s, HEAD ${head}`);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const graspd = await startProcess('graspd', opt.binary, [], {
    NGIT_BIND_ADDRESS: `127.0.0.1:${port}`, NGIT_RELAY_DATA_PATH: join(work, 'relay'),
    NGIT_GIT_DATA_PATH: join(work, 'git'), NGIT_SYNC_ENABLED: 'false', NGIT_GIT_FETCH_ENABLED: 'false',
    NGIT_GIT_MAX_PROCESSES: String(opt['git-max-processes']), NGIT_LOG_LEVEL: 'warn',
    // Every client here comes from 127.0.0.1 but plays a separate user: no per-address shares.
    NGIT_GIT_MAX_PROCESSES_PER_IP: '0', NGIT_GIT_MAX_CONNECTIONS_PER_IP: '0',
  }, answers(`${base}/healthz`));
  const relay = new Relay(`ws://127.0.0.1:${port}`);
  await relay.open();

  const d = 'bench';
  const npub = npubEncode(owner);
  const url = `${base}/${npub}/${d}.git`;
  const at = Math.floor(Date.now() / 1000) - 600;
  const expectOk = (what, msg, prefix) => {
    if (msg[2] !== true || !String(msg[3]).startsWith(prefix)) throw new Error(`${what}: ${JSON.stringify(msg)}`);
  };
  expectOk('announcement', await relay.publish(sign(30617, [['d', d], ['name', d], ['clone', url],
    ['relays', `ws://127.0.0.1:${port}`]], 'clone benchmark', at)), 'purgatory');
  expectOk('state', await relay.publish(sign(30618, [['d', d], ['HEAD', 'ref: refs/heads/main'],
    ['refs/heads/main', head]], '', at + 1)), 'purgatory');
  const before = serverCpu(graspd.pid);
  t0 = now();
  git(['push', '-q', url, 'main'], join(work, 'src'));
  const pushMs = now() - t0;
  await settle(graspd.pid);
  const pushCpu = serverCpu(graspd.pid).all - before.all;
  // The push releases both held events (they are then stored and served).
  const until = Date.now() + 10000;
  while ((await relay.req({ kinds: [30617, 30618], authors: [owner] })).events !== 2) {
    if (Date.now() > until) throw new Error('the push did not release the announcement and state');
    await sleep(20);
  }

  const address = `30617:${owner}:${d}`;
  for (let i = 0; i < opt.events; i++) {
    const ev = sign(1621, [['a', address], ['p', owner], ['subject', `issue ${i}`]],
      `issue ${i}: ${'the clone benchmark needs a few hundred events to query. '.repeat(4)}`, at + 10 + i);
    expectOk(`issue ${i}`, await relay.publish(ev), '');
  }

  const repo = join(work, 'git', npub, `${d}.git`);
  const layout = git(['count-objects', '-v'], repo).split('\n').filter((l) => /^(count|in-pack|packs|size-pack)/.test(l));
  const cgiRoot = join(work, 'cgi');
  mkdirSync(join(cgiRoot, npub), { recursive: true });
  const copied = spawnSync('cp', ['-a', repo, join(cgiRoot, npub)]);
  if (copied.status !== 0) throw new Error(`cp: ${copied.stderr}`);
  const cgiPort = await freePort();
  const cgiBase = `http://127.0.0.1:${cgiPort}`;
  const cgi = await startProcess('git_cgi_server', process.execPath,
    [join(here, 'git_cgi_server.mjs'), '--root', cgiRoot, '--port', String(cgiPort)], {},
    answers(`${cgiBase}/`));
  log(`pushed in ${(pushMs / 1000).toFixed(2)} s (graspd CPU ${pushCpu} ms); repository: ${layout.join(', ')}`);
  return {
    head, relay, pushMs, pushCpu, layout,
    servers: [
      { name: 'graspd', pid: graspd.pid, url },
      { name: 'http-backend', pid: cgi.pid, url: `${cgiBase}/${npub}/${d}.git` },
    ],
  };
}

// ---------- measurements ----------
let cloneN = 0;
async function cloneOnce(server, head) {
  const dest = join(work, `clone-${++cloneN}`);
  await settle(server.pid);
  const c0 = serverCpu(server.pid);
  const r = await gitAsync(['clone', '-q', server.url, dest]);
  await settle(server.pid);
  const c1 = serverCpu(server.pid);
  if (r.code !== 0) throw new Error(`clone from ${server.name} failed: ${r.stderr}`);
  if (git(['rev-parse', 'HEAD'], dest) !== head) throw new Error(`clone from ${server.name}: wrong HEAD`);
  rmSync(dest, { recursive: true, force: true });
  return { ms: r.ms, cpu: c1.all - c0.all, self: c1.self - c0.self };
}

async function concurrentRound(server, graspdPid, relay) {
  await settle(server.pid);
  writeFileSync(`/proc/${server.pid}/clear_refs`, '5'); // resets VmHWM
  const c0 = serverCpu(server.pid);
  const g0 = cpuMs(graspdPid);
  let treePeak = 0;
  const sampler = setInterval(() => { treePeak = Math.max(treePeak, treeRssBytes(server.pid)); }, 100);
  const req = probe(relay, opt['probe-ms']);
  const t0 = now();
  const dests = Array.from({ length: opt.clients }, () => join(work, `clone-${++cloneN}`));
  const results = await Promise.all(dests.map((dest) => gitAsync(['clone', '-q', '--no-checkout', server.url, dest])));
  const totalMs = now() - t0;
  const latencies = await req.stop();
  clearInterval(sampler);
  await settle(server.pid);
  const c1 = serverCpu(server.pid);
  for (const dest of dests) rmSync(dest, { recursive: true, force: true });
  const failed = results.filter((r) => r.code !== 0);
  const walls = results.map((r) => r.ms).sort((a, b) => a - b);
  return {
    totalMs, p50: percentile(walls, 50), max: walls[walls.length - 1], failed: failed.length,
    failure: (failed[0]?.stderr || '').split('\n').join(' / '), cpu: c1.all - c0.all,
    graspdSelf: cpuMs(graspdPid) - g0, hwm: vmHwmBytes(server.pid), treePeak,
    req: { n: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
  };
}

const median = (xs) => percentile([...xs].sort((a, b) => a - b), 50);
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
const mib = (b) => `${(b / 1048576).toFixed(0)} MiB`;
const ms2 = (x) => `${x.toFixed(2)} ms`;

async function main() {
  const setupResult = await setup();
  const { head, relay, servers } = setupResult;
  const [graspd] = servers;
  const report = { command: process.argv.slice(1).join(' '), loadStart: loadavg(), git: git(['--version']),
    push: { ms: setupResult.pushMs, cpu: setupResult.pushCpu }, layout: setupResult.layout };

  const idle = probe(relay, opt['probe-ms'], opt['idle-reqs']);
  const idleLat = await idle.done;
  report.idleReq = { n: idleLat.length, p50: percentile(idleLat, 50), p99: percentile(idleLat, 99) };
  log(`idle REQ (${opt.events} events): p50 ${ms2(report.idleReq.p50)}, p99 ${ms2(report.idleReq.p99)}`);

  const single = Object.fromEntries(servers.map((sv) => [sv.name, []]));
  for (let rep = 0; rep < opt.reps; rep++) {
    for (const sv of rep % 2 ? [...servers].reverse() : servers) {
      const r = await cloneOnce(sv, head);
      single[sv.name].push(r);
      log(`clone ${rep + 1} ${sv.name}: ${s(r.ms)}, server CPU ${r.cpu} ms (own ${r.self} ms); load ${loadavg()}`);
    }
  }
  const concurrent = Object.fromEntries(servers.map((sv) => [sv.name, []]));
  for (let round = 0; round < opt.rounds; round++) {
    for (const sv of round % 2 ? [...servers].reverse() : servers) {
      const r = await concurrentRound(sv, graspd.pid, relay);
      concurrent[sv.name].push(r);
      log(`${opt.clients} clones ${round + 1} ${sv.name}: total ${s(r.totalMs)}, p50 ${s(r.p50)}, max ${s(r.max)}, ` +
        `failed ${r.failed}${r.failed ? ` (${r.failure})` : ''}, server CPU ${r.cpu} ms, ` +
        `HWM ${mib(r.hwm)}, tree peak ${mib(r.treePeak)}, REQ p50 ${ms2(r.req.p50)} p99 ${ms2(r.req.p99)} ` +
        `(n=${r.req.n}); load ${loadavg()}`);
    }
  }
  relay.close();
  report.loadEnd = loadavg();

  console.log(`\n${report.git}; ${opt.mb} MiB of blobs, HEAD ${head}; pushed to graspd in ${s(report.push.ms)} ` +
    `(graspd CPU with its git: ${report.push.cpu} ms); graspd repository after the push: ${report.layout.join(', ')}`);
  console.log(`load average at start ${report.loadStart}, at end ${report.loadEnd}\n`);
  console.log(`| one clone, ${opt.reps} runs alternated | wall (median) | wall (runs) | server CPU (median) | of which the server process |`);
  console.log('|---|---|---|---|---|');
  for (const sv of servers) {
    const rs = single[sv.name];
    console.log(`| ${sv.name} | ${s(median(rs.map((r) => r.ms)))} | ${rs.map((r) => (r.ms / 1000).toFixed(2)).join(' ')} | ` +
      `${median(rs.map((r) => r.cpu))} ms | ${median(rs.map((r) => r.self))} ms |`);
  }
  console.log(`\n| ${opt.clients} concurrent clones (--no-checkout), ${opt.rounds} rounds alternated | total wall | ` +
    'per-clone p50 | per-clone max | failed | server CPU | server peak RSS (own) | peak RSS with git children | ' +
    `REQ p50 / p99 (idle: ${ms2(report.idleReq.p50)} / ${ms2(report.idleReq.p99)}) |`);
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const sv of servers) {
    for (const r of concurrent[sv.name]) {
      console.log(`| ${sv.name} | ${s(r.totalMs)} | ${s(r.p50)} | ${s(r.max)} | ${r.failed} | ${r.cpu} ms | ` +
        `${mib(r.hwm)} | ${mib(r.treePeak)} | ${ms2(r.req.p50)} / ${ms2(r.req.p99)} (n=${r.req.n}; graspd CPU ` +
        `${r.graspdSelf} ms) |`);
    }
  }
  const failures = Object.values(concurrent).flat().reduce((n, r) => n + r.failed, 0);
  return failures === 0 ? 0 : 1;
}

main().then((code) => process.exit(code), (e) => {
  console.error(`[bench] error: ${e.stack || e.message}`);
  process.exit(1);
});
