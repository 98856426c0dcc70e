// Load figures for a graspd cluster behind HAProxy (issue 30; docs/operations.md "Running a
// cluster"; the figures are in docs/benchmarks.md, "Cluster behind HAProxy").
//
//   node deploy/cluster/load.mjs --graspd <binary> --haproxy <haproxy> [--nodes 5] [--events 10000]
//        [--pushes 50] [--connections 4] [--window 64] [--kill] [--json FILE] [--timeout 900]
//
// Starts N graspd nodes on loopback (policy grasp01, purgatory on, Sync+ off, NGIT_SYNC_PEERS naming
// every node, NGIT_DOMAIN the balancer, the per-address limits off as deploy/cluster/start.sh does,
// the per-connection EVENT rate raised, log level warn) and HAProxy configured by
// deploy/cluster/render-haproxy.sh, each in one temporary directory removed at the end. Then:
//
//   pushes   first, since the issues must tag promoted repositories (a held announcement does not
//            count for GRASP-01's related-event rule). One repository per push, each with its own
//            owner: its announcement and state are published through the balancer (a new WebSocket
//            each, so they reach different nodes), the script waits until every node holds both in
//            purgatory (graspd_purgatory_total{outcome="held"}), then `git push`es one small commit
//            through the balancer. The pushes run one after the other; in the background every
//            node's own URL is watched for the pushed ref (the state is asked for by id on each
//            node, and once the node serves it, GET info/refs on that node must show the commit).
//            Measured: the announcement's and state's OKs and their hold on every node (both from
//            the first send), push wall time, end of the push → ref on every node's own URL.
//   events   `--events` pre-signed events (threads: an issue, kind 1621, tagging one of the pushed
//            repositories, then two NIP-22 comments on it, kind 1111) published pipelined through the
//            balancer on `--connections` WebSockets, at most `--window` unanswered on each; a thread
//            stays on one connection, in order. A live subscription on every node's own port
//            timestamps each event's arrival there. Measured: rate from the first send to the last
//            OK; the OK after the send and from the OK to the last node; propagation (arrival − first
//            send) per node, overall and until the last node; events missing per node at the end.
//            With --kill one node (not node1; the node one of the publishing connections is on) is
//            killed with SIGKILL once a third of the events are answered and restarted (same data
//            and port) once two thirds are; its client reconnects through the balancer and sends
//            again what had no answer. Then also: when HAProxy logged it DOWN and UP, the OK true
//            events missing on some node 15 s after the restart, and the restarted node's catch-up
//            time (restart → it serves every event that had OK true when it was restarted).
//
// CPU per node: utime + stime of each graspd process (/proc/<pid>/stat, fields 14 and 15) before and
// after each phase; cutime + cstime (its git children, once reaped) beside it for the pushes. A killed
// node counts its process until the kill plus the restarted one. Also: the copies each node's sync
// received from its peers and how many it recognised as stored (graspd_sync_total), HAProxy's CPU
// and this script's.
//
// Needs Node 20, git, haproxy, and tests/interop/node_modules (ws, nostr-tools; nostr-wasm signs
// faster when present). Prints one summary on stdout (progress on stderr; --json FILE writes the
// figures as JSON too). Exit 0 when nothing was lost: every event answered (OK true, or parked as
// "held … stored if what it depends on arrives") and served by every node at the end, none missing
// 15 s after a restart, every push done and its ref on every node; 1 otherwise; 2 on a usage error.
// Every child process is killed and the temporary directory removed on every exit path.
import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupOnExit, freePort, killNode, nodeEnvironment, sleep, spawnNode, startHaproxy as spawnHaproxy, waitFor, waitForHealthy }
  from './nodes.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');

// ---------- arguments ----------
const opt = { graspd: '', haproxy: '', nodes: 5, events: 10000, pushes: 50, connections: 4, window: 64,
              kill: false, json: '', timeout: 900 };
{
  const argv = process.argv.slice(2);
  const usage = (why) => {
    console.error(`load.mjs: ${why}\nusage: node deploy/cluster/load.mjs --graspd BIN --haproxy BIN [--nodes 5] ` +
      '[--events 10000] [--pushes 50] [--connections 4] [--window 64] [--kill] [--json FILE] [--timeout 900]');
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s);
    const key = flag.replace(/^--/, '');
    if (!flag.startsWith('--') || !(key in opt)) usage(`unknown argument ${argv[i]}`);
    if (typeof opt[key] === 'boolean') { opt[key] = true; continue; }
    const value = inline ?? argv[++i];
    if (value === undefined) usage(`${flag} needs a value`);
    opt[key] = typeof opt[key] === 'number' ? Number(value) : value;
    if (typeof opt[key] === 'number' && !(Number.isInteger(opt[key]) && opt[key] >= 0)) usage(`${flag}: expected a whole number, got "${value}"`);
  }
  const executable = (path) => { try { accessSync(path, constants.X_OK); return true; } catch { return false; } };
  if (!opt.graspd || !executable(opt.graspd)) usage(`no graspd binary at "${opt.graspd}" (--graspd)`);
  if (!opt.haproxy || !executable(opt.haproxy)) usage(`no haproxy at "${opt.haproxy}" (--haproxy)`);
  if (opt.nodes < 2) usage('--nodes: at least 2');
  if (opt.kill && opt.nodes < 3) usage('--kill needs at least 3 nodes');
  if (opt.pushes < 1) usage('--pushes: at least 1 (the events tag the pushed repositories)');
  if (opt.connections < 1 || opt.window < 1) usage('--connections and --window: at least 1');
  if (!existsSync(join(root, 'tests/interop/node_modules/nostr-tools'))) usage('tests/interop/node_modules is missing (npm ci in tests/interop)');
}

const require = createRequire(join(root, 'tests/interop/package.json'));
const WebSocket = require('ws');
const { generateSecretKey, getPublicKey } = require('nostr-tools/pure');
const { npubEncode } = require('nostr-tools/nip19');
// nostr-wasm signs about five times faster than the pure implementation; the same events either way.
let finalizeEvent = require('nostr-tools/pure').finalizeEvent;
try {
  const { initNostrWasm } = await import(require.resolve('nostr-wasm'));
  const wasm = require('nostr-tools/wasm');
  wasm.setNostrWasm(await initNostrWasm());
  finalizeEvent = wasm.finalizeEvent;
} catch { /* the pure signer */ }

// ---------- bookkeeping, cleanup ----------
const started = Date.now();
const children = new Set();
const tmp = mkdtempSync(join(tmpdir(), 'graspd-cluster-load-'));
const problems = [];
const now = () => performance.timeOrigin + performance.now();
const log = (...a) => console.error(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s]`, ...a);
const problem = (what) => { problems.push(what); log(`PROBLEM ${what}`); };

const cleanup = cleanupOnExit(children, tmp, {
  signals: ['SIGINT', 'SIGTERM', 'SIGHUP'], log, report: (e) => console.error(`load.mjs: ${e}`),
});
setTimeout(() => { console.error(`load.mjs: not finished within --timeout ${opt.timeout} s`); cleanup(); process.exit(1); },
  opt.timeout * 1000).unref();

function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
const median = (values) => percentile(values, 50);
const ms = (v) => (Number.isFinite(v) ? `${Math.round(v)} ms` : '–');

/** CPU of a process in ms: [utime + stime, cutime + cstime] (/proc/<pid>/stat, CLK_TCK 100). */
function cpuOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');  // f[0] is field 3 (state)
    const tick = 10;  // ms per clock tick at CLK_TCK 100
    return [(Number(f[11]) + Number(f[12])) * tick, (Number(f[13]) + Number(f[14])) * tick];
  } catch { return [0, 0]; }
}

// ---------- the cluster ----------
const balancerPort = await freePort();
const balancer = `127.0.0.1:${balancerPort}`;
const nodes = [];
for (let i = 0; i < opt.nodes; i++) {
  const port = await freePort();
  nodes.push({ name: `node${i + 1}`, port, dir: join(tmp, `node${i + 1}`), child: null, stderr: { text: '' },
               // CPU of processes of this node that are gone (killed), in ms: [own, children]
               deadCpu: [0, 0] });
}
const peers = nodes.map((n) => `ws://127.0.0.1:${n.port}`).join(',');

// The per-connection EVENT rate raised, so that its token bucket does not pace the publishers.
const eventRate = { NGIT_EVENT_RATE: '10000000', NGIT_EVENT_BURST: '10000000' };

/** CPU of `node` so far, in ms, over all its processes: [own, git children]. */
function nodeCpu(node) {
  const [own, kids] = node.child && node.child.exitCode === null && node.child.signalCode === null ? cpuOf(node.child.pid) : [0, 0];
  return [node.deadCpu[0] + own, node.deadCpu[1] + kids];
}

/** Starts (or restarts, same data and port) `node`; resolves once its /healthz answers (30 s). */
async function startNode(node) {
  const child = spawnNode(opt.graspd, node, nodeEnvironment(node, { balancer, peers, extra: eventRate }), children);
  const healthy = await waitForHealthy(node, 30_000, 25);
  if (healthy !== true)
    throw new Error(`${node.name} (127.0.0.1:${node.port}) did not start (${healthy === 'exited' ? `exited with ${child.exitCode}` : 'no /healthz within 30 s'}):\n${node.stderr.text}`);
}

/** Kills `node` (SIGKILL), adding the CPU its process used to node.deadCpu. */
async function killCountingCpu(node) {
  const [own, kids] = cpuOf(node.child.pid);
  await killNode(node);
  // The last few ms of CPU before the signal are not counted.
  node.deadCpu = [node.deadCpu[0] + own, node.deadCpu[1] + kids];
}

let haproxyProcess = null;
const haproxyOut = { text: '' };
/** When HAProxy first logged each `Server graspd_nodes/<node> is DOWN|UP` line: "node3 DOWN" -> [ms]. */
const haproxySaid = new Map();
/** Starts HAProxy in front of the nodes; resolves once every node is in its rotation (20 s). */
async function startHaproxy() {
  haproxyProcess = spawnHaproxy(opt.haproxy, {
    balancer, addresses: nodes.map((n) => `127.0.0.1:${n.port}`), dir: tmp, children, out: haproxyOut,
    onData: (text) => {
      for (const m of text.matchAll(/graspd_nodes\/(node\d+) is (DOWN|UP)/g)) {
        const key = `${m[1]} ${m[2]}`;
        haproxySaid.set(key, [...(haproxySaid.get(key) || []), now()]);
      }
    },
  });
  // Up, and every node in its rotation.
  const seen = new Set();
  const ok = await waitFor(async () => {
    try {
      const res = await fetch(`http://${balancer}/healthz`);
      await res.arrayBuffer();
      if (res.status === 200) seen.add(res.headers.get('x-graspd-node'));
    } catch {}
    return seen.size === nodes.length;
  }, 20_000, 50);
  if (!ok) throw new Error(`the balancer did not show every node within 20 s (seen: ${[...seen].join(', ')})\n${haproxyOut.text}`);
}

/** True once every node's /api/sync shows every other node as a connected peer. */
async function meshConnected() {
  for (const node of nodes) {
    try {
      const view = await (await fetch(`http://127.0.0.1:${node.port}/api/sync`)).json();
      const status = new Map(view.relays.map((r) => [r.url.replace(/\/$/, ''), r.status]));
      if (!nodes.every((o) => o === node || status.get(`ws://127.0.0.1:${o.port}`) === 'connected')) return false;
    } catch { return false; }
  }
  return true;
}

/** A node's /metrics as a Map from series (name and labels) to value; empty if unreachable. */
async function metrics(port) {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return new Map(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
      const at = l.lastIndexOf(' ');
      return [l.slice(0, at), Number(l.slice(at + 1))];
    }));
  } catch { return new Map(); }
}

/** What a node's sync received: every copy of an event from its peers, and those it already had. */
async function syncTraffic(port) {
  const m = await metrics(port);
  return { received: m.get('graspd_sync_total{what="events_received"}') ?? NaN,
           known: m.get('graspd_sync_total{what="events_known"}') ?? NaN };
}

async function metric(port, name) { return (await metrics(port)).get(name) ?? NaN; }

// ---------- Nostr ----------
const nowSecs = () => Math.floor(Date.now() / 1000);
const sign = (sk, kind, tags, content = '', at = nowSecs()) => finalizeEvent({ kind, created_at: at, tags, content }, sk);

/** A WebSocket client: live subscriptions, queries answered up to EOSE, OKs. */
class Client {
  constructor(url) { Object.assign(this, { url, node: '', ws: null, subs: new Map(), oks: new Map(), n: 0, closed: false }); }
  open(timeoutMs = 5000) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url, { perMessageDeflate: false, handshakeTimeout: timeoutMs });
      this.ws = ws;
      ws.once('upgrade', (res) => { this.node = res.headers['x-graspd-node'] || ''; });
      ws.once('open', () => resolve(this));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => { reject(new Error(`HTTP ${res.statusCode}`)); ws.terminate(); });
      ws.on('message', (data) => this.onMessage(data));
      ws.on('close', () => {
        this.closed = true;
        for (const s of this.subs.values()) s.onclose?.();
        for (const w of this.oks.values()) w([false, 'connection closed']);
        this.oks.clear();
      });
      ws.on('error', () => {});
    });
  }
  onMessage(data) {
    const at = now();
    const msg = JSON.parse(data.toString());
    if (msg[0] === 'OK') { const w = this.oks.get(msg[1]); if (w) { this.oks.delete(msg[1]); w([msg[2], msg[3]]); } return; }
    const sub = this.subs.get(msg[1]);
    if (!sub) return;
    if (msg[0] === 'EVENT') sub.onevent?.(msg[2], at);
    else if (msg[0] === 'EOSE') sub.oneose?.();
    else if (msg[0] === 'CLOSED') { this.subs.delete(msg[1]); sub.onclosed?.(msg[2]); }
  }
  publish(ev, timeoutMs = 10_000) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.oks.delete(ev.id); resolve([false, 'no OK in time']); }, timeoutMs);
      this.oks.set(ev.id, (a) => { clearTimeout(timer); resolve(a); });
      this.ws.send(JSON.stringify(['EVENT', ev]));
    });
  }
  /** A live subscription; resolves at its EOSE. */
  subscribe(filter, onevent) {
    const id = `live${++this.n}`;
    return new Promise((resolve, reject) => {
      this.subs.set(id, { onevent, oneose: resolve, onclosed: (m) => reject(new Error(`${this.url} CLOSED ${m}`)) });
      this.ws.send(JSON.stringify(['REQ', id, filter]));
    });
  }
  /** The ids of `ids` this node serves (REQ by ids, 500 a request); null if it did not answer. */
  async served(ids, timeoutMs = 10_000) {
    const got = new Set();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const id = `q${++this.n}`;
      const ok = await new Promise((resolve) => {
        if (this.closed) return resolve(false);
        const timer = setTimeout(() => { this.subs.delete(id); resolve(false); }, timeoutMs);
        const end = (v) => { clearTimeout(timer); this.subs.delete(id); resolve(v); };
        this.subs.set(id, { onevent: (ev) => got.add(ev.id), oneose: () => end(true), onclosed: () => end(false), onclose: () => end(false) });
        this.ws.send(JSON.stringify(['REQ', id, { ids: chunk, limit: chunk.length }]));
      });
      if (!ok) return null;
      try { this.ws.send(JSON.stringify(['CLOSE', id])); } catch {}
    }
    return got;
  }
  close() { try { this.ws.close(); } catch {} }
}

// ---------- git ----------
const gitHome = join(tmp, 'home');
mkdirSync(gitHome, { recursive: true });
function git(args, cwd = tmp) {
  return new Promise((resolve) => {
    execFile('git', args, {
      cwd, timeout: 60_000,
      env: { PATH: process.env.PATH, HOME: gitHome, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0',
             GIT_AUTHOR_NAME: 'load', GIT_AUTHOR_EMAIL: 'load@example.com', GIT_COMMITTER_NAME: 'load',
             GIT_COMMITTER_EMAIL: 'load@example.com' },
    }, (error, stdout, stderr) => resolve({ code: error ? (error.code ?? 1) : 0, out: `${stdout}${stderr}` }));
  });
}

/** True when node `port` advertises `commit` as refs/heads/main of `path` (GET info/refs). */
async function advertises(port, path, commit) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}/info/refs?service=git-upload-pack`);
    const text = await res.text();
    return res.status === 200 && text.includes(`${commit} refs/heads/main`);
  } catch { return false; }
}

// ---------- the workload, prepared before the cluster starts ----------
/** One repository per push, each with its own owner (purgatory's per-author shares stay out of it). */
async function prepareRepositories() {
  const work = join(tmp, 'work');
  mkdirSync(work, { recursive: true });
  const repos = [];
  for (let i = 0; i < opt.pushes; i++) {
    const owner = generateSecretKey();
    const pk = getPublicKey(owner);
    const d = `load-${i}`;
    const local = join(work, d);
    await git(['init', '-q', '-b', 'main', local]);
    writeFileSync(join(local, 'README'), `repository ${d}, pushed through the balancer\n`);
    await git(['add', 'README'], local);
    await git(['commit', '-q', '-m', `first commit of ${d}`], local);
    const commit = (await git(['rev-parse', 'HEAD'], local)).out.trim();
    if (!/^[0-9a-f]{40}$/.test(commit)) throw new Error(`git commit in ${local} failed: ${commit}`);
    const path = `/${npubEncode(pk)}/${d}.git`;
    const announcement = sign(owner, 30617, [['d', d], ['name', d], ['clone', `http://${balancer}${path}`], ['relays', `ws://${balancer}`]],
      `repository ${d}`, nowSecs() - 60);
    repos.push({ owner, pk, d, local, commit, path, address: `30617:${pk}:${d}`, announcement });
  }
  return repos;
}

/** Threads (an issue, then two comments on it) spread over the repositories, cut at `--events`. */
function prepareEvents(repos) {
  const authors = Array.from({ length: 20 }, () => generateSecretKey());
  const threads = [];
  let count = 0;
  const at = nowSecs();
  for (let t = 0; count < opt.events; t++) {
    const repo = repos[t % repos.length];
    const issue = sign(authors[t % authors.length], 1621, [['a', repo.address], ['p', repo.pk], ['subject', `issue ${t}`]],
      `issue ${t} in ${repo.d}: published through the balancer; this text stands for a bug report of a few lines`, at);
    const thread = [issue];
    for (let c = 0; c < 2 && count + thread.length < opt.events; c++) {
      thread.push(sign(authors[(t + c + 1) % authors.length], 1111,
        [['E', issue.id, '', issue.pubkey], ['K', '1621'], ['P', issue.pubkey],
         ['e', issue.id, '', issue.pubkey], ['k', '1621'], ['p', issue.pubkey]],
        `comment ${c} on issue ${t}: a reply of a sentence or two`, at));
    }
    count += thread.length;
    threads.push(thread);
  }
  return threads;
}

// ---------- phase 1: repositories and pushes ----------
async function pushPhase(repos, watchers) {
  const result = { pushWall: [], okMs: [], heldAll: [], refAll: [], failedPushes: [], missingRefs: [] };
  const cpu0 = nodes.map(nodeCpu);
  const haproxy0 = cpuOf(haproxyProcess.pid)[0];
  const t0 = now();
  const heldBase = await Promise.all(nodes.map((n) => metric(n.port, 'graspd_purgatory_total{outcome="held"}')));
  const pending = [];   // pushes whose ref is not on every node yet
  let watching = true;
  // Background: every 50 ms, ask each node for the pending states by id; where one is served
  // (released: the node has the git data), GET info/refs on that node until it shows the commit.
  const watcher = (async () => {
    while (watching || pending.length) {
      await Promise.all(nodes.map(async (node, k) => {
        const waiting = pending.filter((p) => !p.refAt[k]);
        if (!waiting.length) return;
        const unserved = waiting.filter((p) => !p.servedAt[k]);
        if (unserved.length) {
          const got = await watchers[k].served(unserved.map((p) => p.state.id), 5000);
          for (const p of unserved) if (got?.has(p.state.id)) p.servedAt[k] = now();
        }
        await Promise.all(waiting.filter((p) => p.servedAt[k]).map(async (p) => {
          if (await advertises(node.port, p.repo.path, p.repo.commit)) p.refAt[k] = now();
        }));
      }));
      for (let i = pending.length - 1; i >= 0; i--) {
        const p = pending[i];
        const late = now() - p.pushedAt > 30_000;
        if (p.refAt.every(Boolean) || late) {
          pending.splice(i, 1);
          if (p.refAt.every(Boolean)) result.refAll.push(Math.max(...p.refAt) - p.pushedAt);
          else result.missingRefs.push(`${p.repo.d}: not on ${nodes.filter((_, k) => !p.refAt[k]).map((n) => n.name).join(', ')} 30 s after its push`);
        }
      }
      await sleep(50);
    }
  })();

  let published = 0;  // repositories whose announcement and state got OK true
  for (const repo of repos) {
    const state = sign(repo.owner, 30618, [['d', repo.d], ['HEAD', 'ref: refs/heads/main'], ['refs/heads/main', repo.commit]]);
    const client = await new Client(`ws://${balancer}`).open();
    const tPub = now();
    const answers = [await client.publish(repo.announcement), await client.publish(state)];
    result.okMs.push(now() - tPub);
    client.close();
    if (!answers.every((a) => a[0])) { problem(`${repo.d}: announcement/state through the balancer (${client.node}): ${answers.map((a) => a[1]).join(' / ')}`); continue; }
    published++;
    // Both held on every node: the purgatory counter of each node has grown by two per repository.
    const held = await waitFor(async () => {
      const counts = await Promise.all(nodes.map((n) => metric(n.port, 'graspd_purgatory_total{outcome="held"}')));
      return counts.every((c, k) => c - heldBase[k] >= 2 * published);
    }, 10_000, 50);
    if (!held) { problem(`${repo.d}: announcement and state not held on every node within 10 s`); continue; }
    result.heldAll.push(now() - tPub);
    const tPush = now();
    const push = await git(['push', '-q', `http://${balancer}${repo.path}`, 'main'], repo.local);
    const tPushed = now();
    if (push.code !== 0) { result.failedPushes.push(`${repo.d}: exit ${push.code}: ${push.out.trim()}`); continue; }
    result.pushWall.push(tPushed - tPush);
    pending.push({ repo, state, pushedAt: tPushed, servedAt: nodes.map(() => 0), refAt: nodes.map(() => 0) });
  }
  watching = false;
  await watcher;
  const t1 = now();
  result.seconds = (t1 - t0) / 1000;
  result.cpu = nodes.map((n, k) => { const c = nodeCpu(n); return [c[0] - cpu0[k][0], c[1] - cpu0[k][1]]; });
  result.haproxyCpu = cpuOf(haproxyProcess.pid)[0] - haproxy0;
  for (const f of result.failedPushes) problem(`push failed: ${f}`);
  for (const m of result.missingRefs) problem(`pushed ref: ${m}`);
  return result;
}

// ---------- phase 2: events ----------
/**
 * One publishing connection through the balancer: its threads' events in order, at most
 * `--window` unanswered. When the connection drops it reconnects through the balancer and sends
 * again, in order, every event that had no answer yet.
 */
class Publisher {
  constructor(name, events, shared) {
    Object.assign(this, { name, events, shared, next: 0, pending: new Map(), nodes: [], ws: null,
      reconnects: 0, resent: 0, gaveUp: '' });
    this.done = new Promise((r) => { this.finish = r; });
  }
  async open() {
    const until = Date.now() + 20_000;
    for (;;) {
      try {
        const client = await new Client(`ws://${balancer}`).open(3000);
        this.ws = client.ws;
        this.nodes.push(client.node);
        const ws = client.ws;
        ws.removeAllListeners('message');
        ws.on('message', (data) => this.onMessage(data));
        ws.on('close', () => { if (this.ws === ws) { this.ws = null; this.reconnect(); } });
        return true;
      } catch (e) {
        if (Date.now() > until) { this.gaveUp = `cannot connect through the balancer: ${e.message}`; this.finish(); return false; }
        await sleep(50);
      }
    }
  }
  async reconnect() {
    this.reconnects++;
    if (!(await this.open())) return;
    for (const json of this.pending.values()) { this.ws.send(json); this.resent++; }
    this.pump();
  }
  get node() { return this.nodes.at(-1); }
  pump() {
    const { shared } = this;
    while (this.ws && this.pending.size < opt.window && this.next < this.events.length) {
      const ev = this.events[this.next++];
      const json = shared.json.get(ev.id);
      this.pending.set(ev.id, json);
      if (!shared.sentAt.has(ev.id)) shared.sentAt.set(ev.id, now());
      this.ws.send(json);
    }
    if (this.next >= this.events.length && this.pending.size === 0) this.finish();
  }
  onMessage(data) {
    const msg = JSON.parse(data.toString());
    if (msg[0] !== 'OK' || !this.pending.has(msg[1])) return;
    this.pending.delete(msg[1]);
    this.shared.answer(msg[1], msg[2], msg[3] || '', this.node);
    this.pump();
  }
}

async function eventsPhase(threads, watchers, kill) {
  const all = threads.flat();
  const E = all.length;
  const result = { events: E, issues: all.filter((e) => e.kind === 1621).length, ok: new Map(), parked: new Map(),
    refused: [], arrivals: nodes.map(() => new Map()), byNode: {} };
  const shared = {
    json: new Map(all.map((e) => [e.id, JSON.stringify(['EVENT', e])])),
    sentAt: new Map(),
    answered: 0,
    lastOk: 0,
    onAnswer: () => {},
    answer(id, ok, message, node) {
      this.answered++;
      this.lastOk = now();
      // An event answered once is settled; a second answer (resent after a reconnect) changes nothing.
      if (result.ok.has(id) || result.parked.has(id)) return;
      if (ok) { result.ok.set(id, now()); result.byNode[node] = (result.byNode[node] || 0) + 1; }
      // A comment whose issue the new node does not hold yet is parked there: "held … stored if
      // what it depends on arrives". Checked at the end like the others.
      else if (/held for .* stored if what it depends on arrives/.test(message)) result.parked.set(id, now());
      else result.refused.push(`${id.slice(0, 12)}: ${message} (on ${node})`);
      this.onAnswer();
    },
  };

  // Live subscriptions, one on every node's own port (opened before the phase).
  const live = (k) => watchers[k].subscribe({ kinds: [1621, 1111], limit: 0 }, (ev, at) => {
    const m = result.arrivals[k];
    if (!m.has(ev.id)) m.set(ev.id, at);
  });
  await Promise.all(nodes.map((_, k) => live(k)));

  // Whole threads per connection, round robin.
  const lists = Array.from({ length: opt.connections }, () => []);
  threads.forEach((t, i) => lists[i % lists.length].push(...t));
  const publishers = lists.map((events, i) => new Publisher(`client${i + 1}`, events, shared));
  for (const p of publishers) if (!(await p.open())) throw new Error(`${p.name}: ${p.gaveUp}`);
  result.connections = publishers.map((p) => p.node);
  log(`events: ${E} (${result.issues} issues) on ${publishers.map((p) => `${p.name}→${p.node}`).join(', ')}`);

  // --kill: the node one of the clients is on (not node1), at a third; back at two thirds.
  let victim = null;
  const k = { at: 0, restartAt: 0, healthyAt: 0, answeredAtKill: 0, answeredAtRestart: 0, okAtRestart: [] };
  let advance = async () => {};
  if (kill) {
    const onClient = publishers.map((p) => nodes.find((n) => n.name === p.node)).filter((n) => n && n !== nodes[0]);
    victim = onClient[1 % Math.max(1, onClient.length)] || onClient[0] || nodes[1];
    const v = nodes.indexOf(victim);
    let stage = 0;  // 0 up, 1 being killed, 2 dead, 3 restarted
    // Its sync counters start again at 0 when it restarts: the last reading before the kill
    // (every 250 ms) is added to what the restarted process counts.
    k.trafficBeforeKill = null;
    const sampler = setInterval(async () => {
      const t = await syncTraffic(victim.port);
      if (stage === 0 && Number.isFinite(t.received)) k.trafficBeforeKill = t;
    }, 250);
    let restarting = null;
    // Called on every answer, and once more (`force`) when every event is answered.
    advance = async (force = false) => {
      if (stage === 0 && (force || shared.answered >= E / 3)) {
        stage = 1;
        k.answeredAtKill = shared.answered;
        k.at = now();
        await killCountingCpu(victim);
        clearInterval(sampler);
        k.seenBeforeKill = new Set(result.arrivals[v].keys());
        log(`killed ${victim.name} (SIGKILL) after ${k.answeredAtKill} of ${E} answers`);
        stage = 2;
      }
      if (stage === 2 && (force || shared.answered >= (2 * E) / 3)) {
        stage = 3;
        k.answeredAtRestart = shared.answered;
        k.okAtRestart = [...result.ok.keys()];
        k.restartAt = now();
        restarting = (async () => {
          await startNode(victim);
          k.healthyAt = now();
          log(`restarted ${victim.name} ${Math.round(k.restartAt - k.at)} ms after the kill (${k.answeredAtRestart} answers), ` +
            `healthy ${Math.round(k.healthyAt - k.restartAt)} ms later`);
          watchers[v] = await new Client(`ws://127.0.0.1:${victim.port}`).open();
          await live(v);
        })();
      }
      if (force) { while (stage === 1) await sleep(5); if (stage === 2) await advance(true); await restarting; }
    };
    shared.onAnswer = () => { advance().catch((e) => { console.error(`load.mjs: ${e.stack || e}`); cleanup(); process.exit(1); }); };
  }

  const traffic0 = await Promise.all(nodes.map((n) => syncTraffic(n.port)));
  const cpu0 = nodes.map(nodeCpu);
  const haproxy0 = cpuOf(haproxyProcess.pid)[0];
  const self0 = process.cpuUsage();
  const tFirst = now();
  for (const p of publishers) p.pump();
  await Promise.all(publishers.map((p) => p.done));
  result.publishSeconds = (shared.lastOk - tFirst) / 1000;
  for (const p of publishers) if (p.gaveUp) problem(`${p.name} (${p.nodes.join(' → ')}): ${p.gaveUp}`);
  result.reconnects = publishers.filter((p) => p.reconnects).map((p) => `${p.name} ${p.nodes.join(' → ')}, ${p.resent} sent again`);
  log(`published: ${result.ok.size} OK true, ${result.parked.size} parked, ${result.refused.length} refused in ${result.publishSeconds.toFixed(2)} s`);
  await advance(true);

  // Restarted node's catch-up: it serves every event that had OK true when it was restarted.
  let catchUp = Promise.resolve();
  if (kill) {
    const v = nodes.indexOf(victim);
    catchUp = (async () => {
      let left = k.okAtRestart.filter((id) => !k.seenBeforeKill.has(id));
      k.toCatchUp = left.length;
      const done = await waitFor(async () => {
        left = left.filter((id) => !result.arrivals[v].has(id));
        const got = left.length ? await watchers[v].served(left, 5000) : new Set();
        if (got) left = left.filter((id) => !got.has(id));
        return left.length === 0;
      }, 60_000, 100);
      k.catchUpMs = done ? now() - k.restartAt : NaN;
      k.catchUpLeft = left.length;
    })();
  }

  // Completion: every node serves every accepted (and parked) event. Live arrivals first, then
  // the rest asked for by id. Deadline: 30 s after the last OK; with --kill, 15 s after the restart
  // (or the last OK, when that is later).
  const expected = [...result.ok.keys(), ...result.parked.keys()];
  const deadline = kill ? Math.max(k.restartAt + 15_000, shared.lastOk) : shared.lastOk + 30_000;
  const held = nodes.map(() => new Set());
  const complete = () => nodes.every((_, j) => expected.every((id) => result.arrivals[j].has(id) || held[j].has(id)));
  let lastAsk = 0;
  while (!complete() && now() < deadline) {
    if (now() - lastAsk > 500) {
      lastAsk = now();
      await Promise.all(nodes.map(async (_, j) => {
        const left = expected.filter((id) => !result.arrivals[j].has(id) && !held[j].has(id));
        if (!left.length) return;
        const got = await watchers[j].served(left, 5000);
        if (got) for (const id of got) held[j].add(id);
      }));
    }
    await sleep(20);
  }
  // What is still missing at the deadline (with --kill: 15 s after the restart), asked once more.
  result.missingAtDeadline = await Promise.all(nodes.map(async (_, j) => {
    const left = [...result.ok.keys()].filter((id) => !result.arrivals[j].has(id) && !held[j].has(id));
    if (!left.length) return 0;
    const got = await watchers[j].served(left, 5000);
    return got ? left.filter((id) => !got.has(id)).length : left.length;
  }));
  // The last live arrival of an expected event on any node (events found only by asking count at
  // the moment they were found), from the last OK.
  let lastArrival = shared.lastOk;
  for (const m of result.arrivals) for (const id of expected) lastArrival = Math.max(lastArrival, m.get(id) || 0);
  result.completeMs = complete() ? lastArrival - shared.lastOk : NaN;
  result.seconds = (now() - tFirst) / 1000;
  result.cpu = nodes.map((n, j) => { const c = nodeCpu(n); return [c[0] - cpu0[j][0], c[1] - cpu0[j][1]]; });
  result.haproxyCpu = cpuOf(haproxyProcess.pid)[0] - haproxy0;
  const self = process.cpuUsage(self0);
  result.selfCpu = (self.user + self.system) / 1000;
  await catchUp;

  // Final, authoritative: every node asked by id for every OK true and every parked event.
  result.missing = await Promise.all(nodes.map(async (_, j) => {
    const got = await watchers[j].served(expected, 10_000);
    if (!got) return { ok: NaN, parked: NaN };
    return { ok: [...result.ok.keys()].filter((id) => !got.has(id)).length,
             parked: [...result.parked.keys()].filter((id) => !got.has(id)).length };
  }));
  // Copies received from peers during the phase (the counters follow the sync connections'
  // traffic reports, every second: read after a pause). A restarted node's counters start at 0.
  await sleep(2500);
  result.peerTraffic = await Promise.all(nodes.map(async (n, j) => {
    const t = await syncTraffic(n.port);
    const last = k.trafficBeforeKill ?? traffic0[j];  // the killed process's last reading
    const before = kill && n === victim ? { received: traffic0[j].received - last.received, known: traffic0[j].known - last.known }
                                        : traffic0[j];
    return { received: t.received - before.received, known: t.known - before.known };
  }));

  // The accepting node's answer (first send → OK), and from that OK to the last node's arrival.
  result.ack = [];
  result.afterOk = [];
  for (const [id, okAt] of result.ok) {
    result.ack.push(okAt - shared.sentAt.get(id));
    const ats = result.arrivals.map((m) => m.get(id));
    if (ats.every(Boolean)) result.afterOk.push(Math.max(...ats) - okAt);
  }

  // Propagation: arrival on each node − the event's first send.
  result.latency = nodes.map((_, j) => {
    const v = [];
    for (const id of result.ok.keys()) { const at = result.arrivals[j].get(id); if (at) v.push(at - shared.sentAt.get(id)); }
    return v;
  });
  result.lastNode = [];
  result.lastNodeByKind = { 1621: [], 1111: [] };
  result.notLiveEverywhere = 0;
  const kindOf = new Map(all.map((e) => [e.id, e.kind]));
  for (const id of result.ok.keys()) {
    const ats = result.arrivals.map((m) => m.get(id));
    if (!ats.every(Boolean)) { result.notLiveEverywhere++; continue; }
    const v = Math.max(...ats) - shared.sentAt.get(id);
    result.lastNode.push(v);
    result.lastNodeByKind[kindOf.get(id)].push(v);
  }
  if (kill) {
    const first = (what, after) => (haproxySaid.get(`${victim.name} ${what}`) || []).find((t) => t >= after);
    k.downAfterKill = (first('DOWN', k.at) ?? NaN) - k.at;
    k.upAfterRestart = (first('UP', k.restartAt) ?? NaN) - k.restartAt;
  }
  result.kill = kill ? { victim: victim.name, ...k, seenBeforeKill: undefined, trafficBeforeKill: undefined, okAtRestart: k.okAtRestart.length } : null;

  for (const r of result.refused.slice(0, 5)) problem(`refused: ${r}`);
  if (result.refused.length > 5) problem(`… ${result.refused.length - 5} more refused`);
  const unanswered = E - result.ok.size - result.parked.size - result.refused.length;
  result.unanswered = unanswered;
  if (unanswered) problem(`${unanswered} events never answered`);
  result.missing.forEach((m, j) => {
    if (m.ok) problem(`${nodes[j].name}: ${Number.isNaN(m.ok) ? 'did not answer the final check' : `${m.ok} OK true events missing`}`);
    if (m.parked) problem(`${nodes[j].name}: ${m.parked} parked events missing`);
  });
  if (kill && Math.max(...result.missingAtDeadline) > 0)
    problem(`OK true events missing 15 s after the restart: ${result.missingAtDeadline.map((m, j) => `${nodes[j].name} ${m}`).join(', ')}`);
  if (kill && k.catchUpLeft) problem(`${victim.name} still lacks ${k.catchUpLeft} of the ${k.toCatchUp} events it had to catch up, 60 s after its restart`);
  return result;
}

// ---------- summary ----------
function summary(pushes, ev, loads) {
  const out = [];
  const row = (cells) => out.push(`| ${cells.join(' | ')} |`);
  const pct = (v) => `${ms(percentile(v, 50))} / ${ms(percentile(v, 99))}`;
  out.push(`graspd cluster load: ${opt.nodes} nodes behind HAProxy, ${ev.events} events (${ev.issues} issues, ` +
    `${ev.events - ev.issues} comments) on ${opt.connections} connections (window ${opt.window}), ${opt.pushes} pushes` +
    `${ev.kill ? `, --kill (${ev.kill.victim})` : ''}`);
  out.push(`load average at the start ${loads[0]}, at the end ${loads[1]}`);
  out.push('');
  out.push(`pushes: ${pushes.pushWall.length} of ${opt.pushes} in ${pushes.seconds.toFixed(1)} s; push wall p50/p99 ${pct(pushes.pushWall)}; ` +
    `announcement+state: both OKs p50/p99 ${pct(pushes.okMs)}, held on every node p50/p99 ${pct(pushes.heldAll)} (from the first send); ref on every node's own URL after the push p50/p99 ${pct(pushes.refAll)}` +
    ` (${pushes.refAll.length} of ${pushes.pushWall.length} seen everywhere)`);
  out.push(`events: ${ev.ok.size} OK true, ${ev.parked.size} parked, ${ev.refused.length} refused, ${ev.unanswered} unanswered; ` +
    `${Math.round(ev.events / ev.publishSeconds)} events/s through the balancer (first send → last OK, ${ev.publishSeconds.toFixed(2)} s); ` +
    `accepted by ${Object.entries(ev.byNode).sort().map(([n, c]) => `${n} ${c}`).join(', ')}`);
  const allLat = ev.latency.flat();
  out.push(`OK from the accepting node after the first send p50/p99 ${pct(ev.ack)}; from that OK until the last node's arrival p50/p99 ${pct(ev.afterOk)}`);
  out.push(`propagation (arrival on a node's live subscription − first send): all nodes p50/p99 ${pct(allLat)}; ` +
    `until the last node p50/p99 ${pct(ev.lastNode)} (issues ${pct(ev.lastNodeByKind[1621])}, comments ${pct(ev.lastNodeByKind[1111])})${ev.notLiveEverywhere ? ` (${ev.notLiveEverywhere} events not seen live on every node left out)` : ''}; ` +
    `every node complete ${ms(ev.completeMs)} after the last OK`);
  if (ev.kill) {
    const k = ev.kill;
    out.push(`kill: ${k.victim} killed after ${k.answeredAtKill} answers, restarted ${ms(k.restartAt - k.at)} later (after ${k.answeredAtRestart} answers), ` +
      `/healthz ${ms(k.healthyAt - k.restartAt)} after the restart; ` +
      (Number.isFinite(k.downAfterKill) ? `HAProxy took it out ${ms(k.downAfterKill)} after the kill and back ${ms(k.upAfterRestart)} after the restart; `
                                         : 'HAProxy did not take it out (back before two failed checks); ') +
      `it had to catch up ${k.toCatchUp} events: caught up ${ms(k.catchUpMs)} after the restart; ` +
      `OK true events missing on some node 15 s after the restart: ${Math.max(...ev.missingAtDeadline)}`);
    for (const r of ev.reconnects) out.push(`  reconnected: ${r}`);
  }
  out.push('');
  row(['node', 'p50', 'p99', 'max', 'live', 'missing', 'CPU events', 'µs/event', 'copies from peers (known)', 'CPU pushes (git children)', 'ms/push']);
  row(Array(11).fill('---'));
  nodes.forEach((n, j) => {
    const lat = ev.latency[j];
    const t = ev.peerTraffic[j];
    row([n.name + (ev.kill?.victim === n.name ? ' (killed)' : ''), ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(Math.max(...lat)),
      String(ev.arrivals[j].size), String(ev.missing[j].ok + ev.missing[j].parked),
      `${ev.cpu[j][0]} ms`, (ev.cpu[j][0] * 1000 / ev.events).toFixed(0),
      t ? `${t.received} (${t.known})` : '–',
      `${pushes.cpu[j][0]} ms (${pushes.cpu[j][1]} ms)`, (pushes.cpu[j][0] / opt.pushes).toFixed(1)]);
  });
  const cpuSum = ev.cpu.reduce((s, c) => s + c[0], 0);
  row(['all', ms(percentile(allLat, 50)), ms(percentile(allLat, 99)), ms(Math.max(...allLat)), '', '',
    `${cpuSum} ms`, (cpuSum * 1000 / ev.events).toFixed(0), '',
    `${pushes.cpu.reduce((s, c) => s + c[0], 0)} ms (${pushes.cpu.reduce((s, c) => s + c[1], 0)} ms)`, '']);
  out.push('');
  out.push(`HAProxy CPU: events ${ev.haproxyCpu} ms, pushes ${pushes.haproxyCpu} ms; this script's CPU during the events: ${Math.round(ev.selfCpu)} ms`);
  out.push(problems.length ? `RESULT: LOST or FAILED (${problems.length}): ${problems.join('; ')}` : 'RESULT: nothing lost');
  return out.join('\n');
}

async function main() {
  const loadStart = loadavg().map((v) => v.toFixed(2)).join(' ');
  log(`graspd ${opt.graspd}, haproxy ${opt.haproxy}; balancer ${balancer}, nodes ${nodes.map((n) => n.port).join(', ')}; data in ${tmp}`);
  // Prepared before the cluster starts: git repositories and every signature.
  const repos = await prepareRepositories();
  const tSign = Date.now();
  const threads = prepareEvents(repos);
  log(`prepared ${repos.length} repositories and signed ${threads.flat().length} events (${Date.now() - tSign} ms)`);

  await Promise.all(nodes.map(startNode));
  await startHaproxy();
  if (!(await waitFor(meshConnected, 30_000, 100))) throw new Error('the nodes did not all connect to each other within 30 s');
  log('cluster up: every node in rotation, every node connected to every other');
  const watchers = await Promise.all(nodes.map((n) => new Client(`ws://127.0.0.1:${n.port}`).open()));

  const pushes = await pushPhase(repos, watchers);
  log(`pushes done: ${pushes.pushWall.length} in ${pushes.seconds.toFixed(1)} s`);
  const ev = await eventsPhase(threads, watchers, opt.kill);
  const loads = [loadStart, loadavg().map((v) => v.toFixed(2)).join(' ')];
  const text = summary(pushes, ev, loads);
  console.log(text);
  if (opt.json) {
    const p50 = (v) => percentile(v, 50);
    const p99 = (v) => percentile(v, 99);
    writeFileSync(opt.json, JSON.stringify({
      opt, loads, problems,
      pushes: { done: pushes.pushWall.length, seconds: pushes.seconds, wall: [p50(pushes.pushWall), p99(pushes.pushWall)],
        ok: [p50(pushes.okMs), p99(pushes.okMs)], held: [p50(pushes.heldAll), p99(pushes.heldAll)], ref: [p50(pushes.refAll), p99(pushes.refAll)],
        cpu: pushes.cpu, haproxyCpu: pushes.haproxyCpu },
      events: { total: ev.events, ok: ev.ok.size, parked: ev.parked.size, refused: ev.refused.length, unanswered: ev.unanswered,
        publishSeconds: ev.publishSeconds, rate: ev.events / ev.publishSeconds, byNode: ev.byNode, connections: ev.connections,
        all: [p50(ev.latency.flat()), p99(ev.latency.flat())], last: [p50(ev.lastNode), p99(ev.lastNode)],
        lastIssues: [p50(ev.lastNodeByKind[1621]), p99(ev.lastNodeByKind[1621])],
        lastComments: [p50(ev.lastNodeByKind[1111]), p99(ev.lastNodeByKind[1111])],
        ack: [p50(ev.ack), p99(ev.ack)], afterOk: [p50(ev.afterOk), p99(ev.afterOk)],
        perNode: ev.latency.map((v) => [p50(v), p99(v), Math.max(...v)]), live: ev.arrivals.map((m) => m.size),
        missing: ev.missing, missingAtDeadline: ev.missingAtDeadline, cpu: ev.cpu, haproxyCpu: ev.haproxyCpu, selfCpu: ev.selfCpu, completeMs: ev.completeMs,
        peerTraffic: ev.peerTraffic, reconnects: ev.reconnects, kill: ev.kill },
    }, null, 1));
  }
  watchers.forEach((w) => w.close());
}

main().then(() => { cleanup(); process.exit(problems.length ? 1 : 0); },
  (e) => { console.error(`load.mjs: ${e.stack || e.message}`); cleanup(); process.exit(1); });
