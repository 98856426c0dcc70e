// A graspd cluster behind a real HAProxy, with a node killed mid-stream (docs/operations.md,
// "Running a cluster"). Three graspd nodes (policy grasp01, purgatory and sync on, Sync+ off, each
// started with NGIT_SYNC_PEERS naming all three and NGIT_DOMAIN naming the balancer) behind HAProxy
// configured by deploy/cluster/render-haproxy.sh. Checks, each with a deadline:
//
//   1. balancer: /healthz through it; every node in rotation (X-Graspd-Node);
//   2. a repository: announcement and state published through the balancer reach every node
//      (10 s); a real `git push` through the balancer succeeds and every node's own URL shows the
//      pushed ref (20 s) and serves the announcement (20 s);
//   3. while every node is up: issues published through the balancer on three connections reach
//      every node (10 s);
//   4. three clients publish 300 issues each, pipelined, through the balancer; one node is killed
//      (SIGKILL) mid-stream; requests through the balancer keep being answered; the client that was
//      on the killed node reconnects through the balancer and gets OK true for new events;
//   5. the killed node is restarted (same data, same port): it is back in rotation (5 s), and every
//      event any client got OK true for is served by every node (15 s).
//
// Usage: node cluster_fault_test.mjs <graspd> <haproxy>
// Exit 0: every check passed; 1: a check failed (each failure is printed with the node and what
// was missing); 77: skipped (haproxy not found). Every child process is killed and the temporary
// directory removed on every exit path.
import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupOnExit, freePort, killNode, nodeEnvironment, sleep, spawnNode, startHaproxy, waitFor,
  waitForHealthy }
  from '../../deploy/cluster/nodes.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const [graspd, haproxy] = process.argv.slice(2);

function executable(path) {
  if (!path || path.endsWith('-NOTFOUND')) return false;
  try { accessSync(path, constants.X_OK); return true; } catch { return false; }
}
if (!executable(haproxy)) {
  console.log(`SKIP cluster_fault_test: haproxy not found (${haproxy || 'no path given'}); ` +
    'install the Debian package haproxy (deploy/install-deps.sh) and re-run cmake');
  process.exit(77);
}
if (!executable(graspd)) {
  console.log(`FAIL cluster_fault_test: no graspd binary at "${graspd}" (usage: node cluster_fault_test.mjs <graspd> <haproxy>)`);
  process.exit(1);
}
if (!existsSync(join(root, 'tests/interop/node_modules/nostr-tools'))) {
  console.log('FAIL cluster_fault_test: tests/interop/node_modules is missing (deploy/install-deps.sh, or npm ci in tests/interop)');
  process.exit(1);
}
const require = createRequire(join(root, 'tests/interop/package.json'));
const WebSocket = require('ws');
const { generateSecretKey, getPublicKey, finalizeEvent } = require('nostr-tools/pure');
const { npubEncode } = require('nostr-tools/nip19');

// ---------- bookkeeping, cleanup ----------
const started = Date.now();
const children = new Set();
const tmp = mkdtempSync(join(tmpdir(), 'graspd-cluster-test-'));
const failures = [];
const secs = () => ((Date.now() - started) / 1000).toFixed(1).padStart(5);
const log = (...a) => console.log(`[${secs()} s]`, ...a);
function pass(what) { log(`ok ${what}`); }
function fail(what) { failures.push(what); log(`FAIL ${what}`); }

const cleanup = cleanupOnExit(children, tmp, {
  log, report: (e) => console.log(`FAIL cluster_fault_test: ${e}`),
});
// Below ctest's TIMEOUT 240, so that the failure is ours, with the logs, and the children die.
setTimeout(() => { fail('the whole test did not finish within 225 s'); finish(); }, 225_000);

// ---------- the cluster ----------
const N = 3;
const balancerPort = await freePort();
const nodePorts = [];
for (let i = 0; i < N; i++) nodePorts.push(await freePort());
const balancer = `127.0.0.1:${balancerPort}`;
const peers = nodePorts.map((p) => `ws://127.0.0.1:${p}`).join(',');

// The environment of graspd is built by nodeEnvironment (no stray NGIT_* from the caller's), but a
// sanitizer build keeps the options ctest gives it.
const sanitizerOptions = Object.fromEntries(['UBSAN_OPTIONS', 'ASAN_OPTIONS', 'LSAN_OPTIONS', 'TSAN_OPTIONS']
  .filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]));

const nodes = nodePorts.map((port, i) => ({
  name: `node${i + 1}`, port, dir: join(tmp, `node${i + 1}`), child: null, stderr: { text: '' },
  describe() { return `${this.name} (127.0.0.1:${this.port})`; },
}));

/** Starts (or restarts, same data and port) `node`; true once its /healthz answers (20 s). */
async function startNode(node) {
  const child = spawnNode(graspd, node, nodeEnvironment(node, { balancer, peers, extra: sanitizerOptions }), children);
  const healthy = await waitForHealthy(node, 20_000, 50);
  if (healthy !== true) {
    fail(`${node.describe()} did not start (${healthy === 'exited' ? `exited with ${child.exitCode}` : '/healthz not answering within 20 s'}):\n${node.stderr.text}`);
    return false;
  }
  return true;
}

const haproxyOut = { text: '' };  // its stdout and stderr: notices (server UP/DOWN) and alerts

/** Lines of HAProxy's log matching `re`. */
const haproxySaid = (re) => haproxyOut.text.split('\n').filter((l) => re.test(l));

/** GET through the balancer: [status, the node that answered] or [0, error]. */
async function viaBalancer(path, headers = {}) {
  try {
    const res = await fetch(`http://${balancer}${path}`, { headers });
    await res.arrayBuffer();
    return [res.status, res.headers.get('x-graspd-node') || ''];
  } catch (e) { return [0, e.message]; }
}

// ---------- Nostr ----------
const nowSecs = () => Math.floor(Date.now() / 1000);
const sign = (sk, kind, tags, content = '', at = nowSecs()) => finalizeEvent({ kind, created_at: at, tags, content }, sk);

/** One WebSocket client; `node` is the cluster node that answered the upgrade (X-Graspd-Node). */
function connect(url, timeoutMs = 5000) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: timeoutMs });
    let node = '';
    ws.once('upgrade', (res) => { node = res.headers['x-graspd-node'] || ''; });
    ws.once('open', () => resolve({ ws, node }));
    ws.once('error', (e) => reject(e));
    ws.once('unexpected-response', (_req, res) => { reject(new Error(`HTTP ${res.statusCode}`)); ws.terminate(); });
  });
}

/** Publishes events on `ws`, waits for their OKs (`ms`): Map id -> [ok, message]. */
function publishAll(ws, events, ms = 10_000) {
  return new Promise((resolve) => {
    const answers = new Map();
    const wanted = new Set(events.map((e) => e.id));
    const timer = setTimeout(done, ms);
    function done() { clearTimeout(timer); ws.off('message', onMessage); resolve(answers); }
    function onMessage(data) {
      const msg = JSON.parse(data.toString());
      if (msg[0] === 'OK' && wanted.has(msg[1])) { answers.set(msg[1], [msg[2], msg[3]]); if (answers.size === wanted.size) done(); }
    }
    ws.on('message', onMessage);
    for (const e of events) ws.send(JSON.stringify(['EVENT', e]));
  });
}

/** Ids of `ids` that the node on `port` serves (REQ by ids, directly, 500 a request); null if unreachable. */
async function servedIds(port, ids) {
  let conn;
  try { conn = await connect(`ws://127.0.0.1:${port}`, 3000); } catch { return null; }
  const { ws } = conn;
  const got = new Set();
  try {
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const sub = `q${i}`;
      const ok = await new Promise((resolve) => {
        const timer = setTimeout(() => { ws.off('message', onMessage); resolve(false); }, 5000);
        function onMessage(data) {
          const msg = JSON.parse(data.toString());
          if (msg[1] !== sub) return;
          if (msg[0] === 'EVENT') got.add(msg[2].id);
          else if (msg[0] === 'EOSE' || msg[0] === 'CLOSED') { clearTimeout(timer); ws.off('message', onMessage); resolve(msg[0] === 'EOSE'); }
        }
        ws.on('message', onMessage);
        ws.send(JSON.stringify(['REQ', sub, { ids: chunk, limit: chunk.length }]));
      });
      ws.send(JSON.stringify(['CLOSE', sub]));
      if (!ok) return null;
    }
  } finally { ws.close(); }
  return got;
}

/**
 * Waits until every node in `which` serves every id of `ids` (`ms`); on timeout one failure per
 * node naming how many are missing and the first few. Returns the ms it took, or null.
 */
async function expectEverywhere(what, ids, ms, which = nodes, deadline = `${ms / 1000} s later`) {
  const t0 = Date.now();
  const missing = new Map(which.map((n) => [n, ids]));
  await waitFor(async () => {
    for (const node of which) {
      const left = missing.get(node);
      if (left.length === 0) continue;
      const got = await servedIds(node.port, left);
      if (got) missing.set(node, left.filter((id) => !got.has(id)));
    }
    return [...missing.values()].every((l) => l.length === 0);
  }, ms, 250);
  let ok = true;
  for (const [node, left] of missing) {
    if (left.length === 0) continue;
    ok = false;
    fail(`${what}: ${node.describe()} does not serve ${left.length} of ${ids.length} events ${deadline} ` +
      `(e.g. ${left.slice(0, 3).map((id) => id.slice(0, 12)).join(', ')})`);
  }
  if (ok) { const took = Date.now() - t0; pass(`${what}: all ${ids.length} events served by every node ${which.length === N ? '' : `of ${which.map((n) => n.name).join(', ')} `}(${took} ms)`); return took; }
  return null;
}

/** How many cluster peers a node's /api/sync shows connected (0 when it does not answer). */
async function connectedPeers(port) {
  try {
    const view = await (await fetch(`http://127.0.0.1:${port}/api/sync`)).json();
    return (view.relays || []).filter((r) => r.peer && r.status === 'connected').length;
  } catch { return 0; }
}

async function metric(port, name) {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? Number(line.slice(name.length + 1)) : NaN;
  } catch { return NaN; }
}

// ---------- git ----------
const gitHome = join(tmp, 'home');
mkdirSync(gitHome, { recursive: true });
function git(args, cwd = tmp) {
  return new Promise((resolve) => {
    execFile('git', args, {
      cwd, timeout: 30_000,
      env: { PATH: process.env.PATH, HOME: gitHome, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0',
             GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
    }, (error, stdout, stderr) => resolve({ code: error ? (error.code ?? 1) : 0, out: `${stdout}${stderr}` }));
  });
}

// ---------- the clients of the fault phase ----------
/**
 * Publishes its events through the balancer, pipelined (up to 64 unanswered, two every 10 ms),
 * without waiting for OKs. When its connection drops it reconnects through the balancer and sends
 * again every event that had no OK yet, then goes on.
 */
class Publisher {
  constructor(name, events) {
    Object.assign(this, { name, events, next: 0, pending: new Map(), accepted: new Map(), refused: [],
      reconnects: 0, sentAfterReconnect: new Set(), acceptedAfterReconnect: 0, nodes: [], ws: null, gaveUp: '' });
  }
  async open() {
    const until = Date.now() + 15_000;
    for (;;) {
      try {
        const { ws, node } = await connect(`ws://${balancer}`, 3000);
        this.ws = ws;
        this.nodes.push(node);
        ws.on('message', (data) => this.onMessage(data));
        ws.on('close', () => { if (this.ws === ws) this.ws = null; });
        ws.on('error', () => {});
        return true;
      } catch (e) {
        if (Date.now() > until) { this.gaveUp = `cannot reconnect through the balancer: ${e.message}`; return false; }
        await sleep(100);
      }
    }
  }
  onMessage(data) {
    const msg = JSON.parse(data.toString());
    if (msg[0] !== 'OK' || !this.pending.has(msg[1])) return;
    this.pending.delete(msg[1]);
    if (msg[2]) {
      this.accepted.set(msg[1], this.node);  // id -> the node that answered OK true
      if (this.sentAfterReconnect.has(msg[1])) this.acceptedAfterReconnect++;
    }
    else this.refused.push(`${msg[1].slice(0, 12)}: ${msg[3]} (on ${this.nodes.at(-1)})`);
  }
  get node() { return this.nodes.at(-1); }
  async run(deadline) {
    while (this.next < this.events.length || this.pending.size > 0) {
      if (Date.now() > deadline) { this.gaveUp = `${this.pending.size} events unanswered at the deadline`; return; }
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
        if (this.ws) { await sleep(10); continue; }  // closing
        this.reconnects++;
        if (!(await this.open())) return;
        for (const ev of this.pending.values()) this.ws.send(JSON.stringify(['EVENT', ev]));
      }
      for (let k = 0; k < 2 && this.next < this.events.length && this.pending.size < 64; k++) {
        const ev = this.events[this.next++];
        this.pending.set(ev.id, ev);
        if (this.reconnects > 0) this.sentAfterReconnect.add(ev.id);
        this.ws.send(JSON.stringify(['EVENT', ev]));
      }
      await sleep(10);  // pacing, so that the kill lands mid-stream
    }
  }
}

// ---------- the test ----------
function finish() {
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (failures.length) {
    console.log(`\n--- haproxy output (end) ---\n${haproxyOut.text.slice(-8192)}`);
    for (const n of nodes) console.log(`--- ${n.describe()} stderr (end) ---\n${n.stderr.text}`);
    console.log(`\nFAILED: ${failures.length} check(s) in ${seconds} s:`);
    for (const f of failures) console.log(`  - ${f.split('\n')[0]}`);
  } else {
    console.log(`\nPASSED: every check in ${seconds} s`);
  }
  cleanup();
  process.exit(failures.length ? 1 : 0);
}

async function main() {
  log(`graspd ${graspd}, haproxy ${haproxy}; balancer ${balancer}, nodes ${nodePorts.join(', ')}; data in ${tmp}`);
  const up = await Promise.all(nodes.map(startNode));
  if (!up.every(Boolean)) return;
  startHaproxy(haproxy, { balancer, addresses: nodePorts.map((p) => `127.0.0.1:${p}`), dir: tmp, children, out: haproxyOut });

  // 1. The balancer answers, and every node is in its rotation.
  const ready = await waitFor(async () => (await viaBalancer('/healthz'))[0] === 200, 20_000, 100);
  if (!ready) { fail(`the balancer on ${balancer} did not answer /healthz within 20 s`); return; }
  const seen = new Set();
  await waitFor(async () => { const [s, n] = await viaBalancer('/healthz'); if (s === 200) seen.add(n); return seen.size === N; }, 10_000, 50);
  if (seen.size === N) pass(`balancer up, every node in rotation (${[...seen].sort().join(', ')})`);
  else fail(`only ${[...seen].join(', ')} answered through the balancer within 10 s`);
  for (const [i, node] of nodes.entries()) {
    const [status, by] = await viaBalancer(`/node/${i + 1}/metrics`);
    if (status === 200 && by === node.name) continue;
    fail(`GET /node/${i + 1}/metrics through the balancer: status ${status}, answered by "${by}" (want 200 from ${node.name})`);
  }
  const [nip11] = await viaBalancer('/', { Accept: 'application/nostr+json' });
  if (nip11 !== 200) fail(`NIP-11 through the balancer answered ${nip11}`);

  // The nodes' sync connections to each other are up: a held event's OK waits only for the peers
  // whose connection is up (docs/sync.md, "Purgatory travels too"), so publishing while a node is
  // still dialling its peers would test start-up, not the balancer. An operator starts a cluster
  // the same way: every node in rotation and connected to the others.
  const meshUp = await waitFor(async () => {
    for (const node of nodes) if ((await connectedPeers(node.port)) < N - 1) return false;
    return true;
  }, 20_000, 50);
  if (meshUp) pass(`every node connected to its ${N - 1} peers`);
  else { fail(`the nodes were not all connected to their ${N - 1} peers within 20 s`); return; }

  // 2. A repository: announcement and state through the balancer, then git push through it.
  const owner = generateSecretKey();
  const pk = getPublicKey(owner);
  const d = 'cluster-fault';
  const path = `/${npubEncode(pk)}/${d}.git`;
  const gitUrl = `http://${balancer}${path}`;
  const work = join(tmp, 'work');
  mkdirSync(work, { recursive: true });
  await git(['init', '-q', '-b', 'main', 'local'], work);
  const local = join(work, 'local');
  writeFileSync(join(local, 'README'), 'a repository pushed through the balancer\n');
  await git(['add', 'README'], local);
  await git(['commit', '-q', '-m', 'one'], local);
  writeFileSync(join(local, 'data.txt'), 'x'.repeat(100_000));
  await git(['add', 'data.txt'], local);
  await git(['commit', '-q', '-m', 'two'], local);
  const commit = (await git(['rev-parse', 'HEAD'], local)).out.trim();
  if (!/^[0-9a-f]{40}$/.test(commit)) throw new Error(`git commit failed: ${commit}`);

  const announcement = sign(owner, 30617, [['d', d], ['name', d], ['clone', gitUrl], ['relays', `ws://${balancer}`]],
    'a repository served by a cluster', nowSecs() - 60);
  const state = sign(owner, 30618, [['d', d], ['HEAD', 'ref: refs/heads/main'], ['refs/heads/main', commit]]);
  const first = await connect(`ws://${balancer}`);
  const answers = await publishAll(first.ws, [announcement, state]);
  first.ws.close();
  for (const [ev, what] of [[announcement, 'announcement'], [state, 'state']]) {
    const a = answers.get(ev.id);
    if (a && a[0]) pass(`${what} accepted through the balancer by ${first.node}: ${a[1]}`);
    else { fail(`${what} through the balancer (${first.node}): ${a ? `OK false ${a[1]}` : 'no OK within 10 s'}`); return; }
  }

  // Both wait in purgatory for the git data on every node, and already do when their OK comes: a
  // held event's OK waits for the cluster peers to hold it, so the push below (as ngit pushes,
  // right after the state's OK) may reach any node. Looked at once, without waiting.
  const heldAt = new Map();
  const t0 = Date.now();
  await waitFor(async () => {
    for (const node of nodes) {
      if (heldAt.has(node)) continue;
      const ls = await git(['ls-remote', `http://127.0.0.1:${node.port}${path}`]);
      const held = await metric(node.port, 'graspd_purgatory_events{kind="state"}');
      if (ls.code === 0 && held >= 1) heldAt.set(node, Date.now() - t0);
    }
    return heldAt.size === N;
  }, 0, 200);
  for (const node of nodes) {
    if (heldAt.has(node)) continue;
    const ls = await git(['ls-remote', `http://127.0.0.1:${node.port}${path}`]);
    const held = await metric(node.port, 'graspd_purgatory_events{kind="state"}');
    fail(`announcement and state published through the balancer: ${node.describe()} did not hold both when their OK came ` +
      `(asked again now: ${ls.code !== 0 ? 'no repository' : 'repository'}, ls-remote exit ${ls.code}, graspd_purgatory_events{kind="state"} ${held})`);
  }
  if (heldAt.size === N) pass(`announcement and state held on every node (${[...heldAt.values()].join(', ')} ms)`);

  const push = await git(['push', gitUrl, 'main'], local);
  if (push.code === 0) pass(`git push through the balancer (${gitUrl})`);
  else fail(`git push through the balancer failed (exit ${push.code}):\n${push.out}`);

  const tPush = Date.now();
  const refsAt = new Map();
  await waitFor(async () => {
    for (const node of nodes) {
      if (refsAt.has(node)) continue;
      const ls = await git(['ls-remote', `http://127.0.0.1:${node.port}${path}`]);
      if (ls.code === 0 && ls.out.includes(`${commit}\trefs/heads/main`)) refsAt.set(node, Date.now() - tPush);
    }
    return refsAt.size === N;
  }, 20_000, 250);
  for (const node of nodes) {
    if (refsAt.has(node)) continue;
    const ls = await git(['ls-remote', `http://127.0.0.1:${node.port}${path}`]);
    fail(`pushed ref: git ls-remote on ${node.describe()} did not show ${commit.slice(0, 12)} refs/heads/main within 20 s of the push ` +
      `(asked again now: exit ${ls.code}, ${ls.out.trim().split('\n').slice(0, 3).join(' | ') || 'no refs'})`);
  }
  if (refsAt.size === N) pass(`pushed ref on every node's own URL (${nodes.map((n) => `${n.name} ${refsAt.get(n)} ms`).join(', ')})`);
  await expectEverywhere('repository promoted (announcement and state served)', [announcement.id, state.id], 20_000);

  // 3. While every node is up: issues through the balancer on three connections reach every node.
  const authors = Array.from({ length: 4 }, () => generateSecretKey());
  const address = `30617:${pk}:${d}`;
  let serial = 0;
  const issue = () => {
    const n = serial++;
    return sign(authors[n % authors.length], 1621, [['a', address], ['p', pk], ['subject', `issue ${n}`]], `issue ${n} through the balancer`);
  };
  const steady = Array.from({ length: 3 }, () => Array.from({ length: 20 }, issue));
  const steadyAccepted = [];
  await Promise.all(steady.map(async (events) => {
    const { ws, node } = await connect(`ws://${balancer}`);
    const got = await publishAll(ws, events);
    ws.close();
    const refused = events.filter((e) => !got.get(e.id)?.[0]);
    for (const e of events) if (got.get(e.id)?.[0]) steadyAccepted.push(e.id);
    if (refused.length) {
      const a = got.get(refused[0].id);
      fail(`${refused.length} of ${events.length} issues published through the balancer (answered by ${node}) were not accepted: ${a ? a[1] : 'no OK within 10 s'}`);
    }
  }));
  if (steadyAccepted.length) await expectEverywhere('issues published while every node is up', steadyAccepted, 10_000);

  // 4. Three clients publish pipelined through the balancer; one node is killed mid-stream.
  const publishers = Array.from({ length: 3 }, (_, k) => new Publisher(`client${k + 1}`, Array.from({ length: 300 }, issue)));
  for (const p of publishers) if (!(await p.open())) { fail(`${p.name}: ${p.gaveUp}`); return; }
  log(`clients on ${publishers.map((p) => `${p.name}→${p.node}`).join(', ')}`);
  // The victim: the node client2 is on (so at least one client loses its connection).
  const victim = nodes.find((n) => n.name === publishers[1].node) || nodes[1];
  const deadline = Date.now() + 60_000;
  const running = publishers.map((p) => p.run(deadline));
  const total = publishers.length * 300;
  await waitFor(() => publishers.reduce((s, p) => s + p.accepted.size + p.refused.length, 0) >= total / 4, 20_000, 5);
  const answeredAtKill = publishers.reduce((s, p) => s + p.accepted.size + p.refused.length, 0);
  await killNode(victim);
  const tKill = Date.now();
  log(`killed ${victim.describe()} with SIGKILL after ${answeredAtKill} of ${total} events answered`);
  // HAProxy takes the dead node out of rotation (its health check logs it): watched from now on.
  const down = new RegExp(`graspd_nodes/${victim.name} is DOWN`);
  const wentDown = waitFor(() => (haproxySaid(down).length > 0 ? Date.now() - tKill : 0), 5000, 20);

  // Requests through the balancer keep being answered: a request that finds the dead node is
  // retried on another one (retry-on conn-failure, redispatch) until the health check removes it.
  const statuses = [];
  for (let i = 0; i < 20; i++) statuses.push((await viaBalancer('/healthz'))[0]);
  if (statuses.every((s) => s === 200)) pass('20 requests through the balancer right after the kill: all 200');
  else fail(`requests through the balancer right after the kill: statuses ${statuses.join(' ')}`);

  await Promise.all(running);
  for (const p of publishers) {
    if (p.gaveUp) fail(`${p.name} (${p.nodes.join(' → ')}): ${p.gaveUp}`);
    if (p.refused.length) fail(`${p.name} (${p.nodes.join(' → ')}): ${p.refused.length} events refused, e.g. ${p.refused[0]}`);
  }
  const reconnected = publishers.filter((p) => p.reconnects > 0);
  if (reconnected.length === 0) fail(`no client lost its connection when ${victim.name} was killed (clients on ${publishers.map((p) => p.nodes[0]).join(', ')})`);
  for (const p of reconnected) {
    if (p.acceptedAfterReconnect > 0) pass(`${p.name} reconnected through the balancer (${p.nodes.join(' → ')}) and got OK true for ${p.acceptedAfterReconnect} of the ${p.sentAfterReconnect.size} new events it sent then`);
    else fail(`${p.name} reconnected through the balancer (${p.nodes.join(' → ')}) but got OK true for none of the ${p.sentAfterReconnect.size} new events it sent then`);
  }
  const faultAccepted = publishers.flatMap((p) => [...p.accepted.keys()]);
  log(`fault phase: ${faultAccepted.length} of ${total} events got OK true, ${Date.now() - tKill} ms after the kill`);

  const downAfter = await wentDown;
  if (downAfter) pass(`HAProxy took ${victim.name} out of rotation ${downAfter} ms after the kill`);
  else fail(`HAProxy did not log "graspd_nodes/${victim.name} is DOWN" within 5 s of the kill`);

  // Meanwhile the surviving nodes keep each other complete: what either accepted, both serve.
  const alive = nodes.filter((n) => n !== victim);
  const bySurvivors = publishers.flatMap((p) => [...p.accepted].filter(([, by]) => by !== victim.name).map(([id]) => id));
  if (bySurvivors.length) await expectEverywhere(`events accepted by ${alive.map((n) => n.name).join(' and ')} while ${victim.name} is dead`, bySurvivors, 10_000, alive);

  // 5. The killed node comes back (same data dir, same port): in rotation again, and complete.
  if (!(await startNode(victim))) return;
  const tRestart = Date.now();
  log(`restarted ${victim.describe()} ${tRestart - tKill} ms after the kill`);
  const upAgain = new RegExp(`graspd_nodes/${victim.name} is UP`);
  const back = await waitFor(async () => haproxySaid(upAgain).length > 0 && (await viaBalancer('/healthz'))[1] === victim.name, 5000, 20);
  if (back) pass(`${victim.name} back in rotation ${Date.now() - tRestart} ms after its restart`);
  else fail(`${victim.name} was not back in rotation (HAProxy "is UP" and answering through the balancer) within 5 s of its restart`);
  const everything = [announcement.id, state.id, ...steadyAccepted, ...faultAccepted];
  await expectEverywhere(`every OK true event after ${victim.name}'s restart`, everything,
    Math.max(0, tRestart + 15_000 - Date.now()), nodes, '15 s after the restart');
}

main().then(finish, (e) => { fail(`error: ${e.stack || e.message}`); finish(); });
