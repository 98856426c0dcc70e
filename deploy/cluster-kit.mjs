// graspd cluster kit: starts graspd nodes on loopback and measures GRASP-02 sync.
// Run through deploy/cluster.sh (which finds the binary and cleans up); modes:
//
//   cluster  --nodes N --events E          propagation p50/p99 and loss across N nodes
//   fullsync --repos R --issues I --comments C [--events-cache FILE]
//                                          full sync from zero from one peer (sync off, loaded with
//                                          `graspd import`) into a fresh node; --events-cache as catchup
//   catchup  --repos R --issues I --comments C --missing-every M [--missing spread|recent] [--events-cache FILE]
//                                          a node holding all but every M-th event catches up from a
//                                          peer holding all (both loaded with `graspd import`); with
//                                          --events-cache the signed events (and the two ports their
//                                          announcements name) are saved once and reused
//   (fullsync and catchup: --strfry PATH makes the peer a strfry relay loaded with `strfry import`;
//    both print wall time, CPU, message bytes and wire bytes as the kernel counted them)
//   memory   --repos R                     resident memory per R tracked repositories
//   plus     --repos R --issues T --authors A --relays L [--reconcile S] [--events-cache FILE]
//                                          GRASP-03 Sync+: replies found only in participants'
//                                          mailboxes on L relays (deploy/kit-plus.mjs)
//
// Node modules (ws, nostr-tools) come from tests/interop/node_modules. Every child process is
// killed on exit, including on SIGINT/SIGTERM and on errors.
import { createRequire } from 'node:module';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import { plus } from './kit-plus.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'tests/interop/package.json'));
const WebSocket = require('ws');
const { generateSecretKey, getPublicKey, finalizeEvent } = require('nostr-tools/pure');

// ---------- arguments ----------
const argv = process.argv.slice(2);
const mode = argv[0] && !argv[0].startsWith('--') ? argv.shift() : 'cluster';
const opt = { nodes: 3, events: 1000, binary: '', repos: 50, issues: 200, comments: 2, window: 64,
              timeout: 120, keep: false, verbose: false, missing_every: 100, missing: 'spread', events_cache: '',
              authors: 5000, relays: 200, reconcile: 1, strfry: '' };
for (let i = 0; i < argv.length; i++) {
  const key = argv[i].replace(/^--/, '').replace(/-/g, '_');
  if (key === 'keep' || key === 'verbose') { opt[key] = true; continue; }
  if (!(key in opt)) { console.error(`unknown option ${argv[i]}`); process.exit(2); }
  opt[key] = typeof opt[key] === 'number' ? Number(argv[++i]) : argv[++i];
}
if (!opt.binary) { console.error('--binary PATH is required (deploy/cluster.sh passes it)'); process.exit(2); }

// ---------- processes ----------
const children = [];
const tempDirs = [];
function cleanup() {
  for (const c of children) if (c.exitCode === null) { try { c.kill('SIGKILL'); } catch {} }
  if (!opt.keep) for (const d of tempDirs) { try { rmSync(d, { recursive: true, force: true }); } catch {} }
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { cleanup(); process.exit(130); });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error('[kit]', ...a);

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

function nodeDir(name) {
  const dir = mkdtempSync(join(process.env.GRASPD_KIT_TMP || tmpdir(), `graspd-kit-${name}-`));
  tempDirs.push(dir);
  return dir;
}

/** Starts graspd on `port` (data in `dir`, a new one by default) once /healthz answers. */
function startNode(name, port, env = {}, dir = nodeDir(name)) {
  const child = spawn(opt.binary, [], {
    env: {
      ...process.env,
      NGIT_BIND_ADDRESS: `127.0.0.1:${port}`,
      NGIT_RELAY_DATA_PATH: join(dir, 'relay'),
      NGIT_RELAY_OWNER_NSEC_FILE: join(dir, 'relay-owner.nsec'),
      NGIT_ACCEPTANCE_POLICY: 'grasp01',
      // The kit publishes announcements and pushes no git data: purgatory would hold them all.
      NGIT_PURGATORY_ENABLED: 'false',
      NGIT_SYNC_ENABLED: 'true',
      NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES: 'true',
      NGIT_SYNC_BATCH_WINDOW_MS: '200',
      NGIT_SYNC_BASE_BACKOFF_SECS: '1',
      NGIT_SYNC_PLUS_ENABLED: 'false',
      NGIT_LOG_LEVEL: opt.verbose ? 'info' : 'warn',
      NGIT_EVENT_RATE: '1000000',
      NGIT_EVENT_BURST: '1000000',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let seen = '';
  let exited = null;
  child.stderr.on('data', (chunk) => {
    const text = chunk.toString();
    if (opt.verbose) process.stderr.write(`[${name}] ${text}`);
    if (seen.length < 20000) seen += text;
  });
  child.on('exit', (code) => { exited = code; });
  // Ready when /healthz answers (the "listening on" line is an info log, hidden at level warn).
  return (async () => {
    const until = Date.now() + 20000;
    for (;;) {
      if (exited !== null) throw new Error(`${name} exited with ${exited}\n${seen}`);
      try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) break; } catch {}
      if (Date.now() > until) throw new Error(`${name}: /healthz not ready within 20 s\n${seen}`);
      await sleep(50);
    }
    return { name, port, pid: child.pid, child, dir };
  })();
}

async function httpJson(port, path) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return path === '/metrics' ? res.text() : res.json();
}

async function waitFor(what, fn, timeoutMs = opt.timeout * 1000, everyMs = 100) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timeout waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ---------- NIP-01 client ----------
class Conn {
  constructor(port) { this.url = `ws://127.0.0.1:${port}`; this.waiting = new Map(); this.subs = new Map(); this.n = 0; }
  open() {
    this.ws = new WebSocket(this.url, { perMessageDeflate: false });
    this.ws.on('message', (data) => this.onMessage(data));
    return new Promise((resolve, reject) => { this.ws.once('open', resolve); this.ws.once('error', reject); });
  }
  onMessage(data) {
    const at = performance.timeOrigin + performance.now();
    const msg = JSON.parse(data.toString());
    if (msg[0] === 'OK') { const w = this.waiting.get(msg[1]); if (w) { this.waiting.delete(msg[1]); w([msg[2], msg[3]]); } }
    else if (msg[0] === 'EVENT') this.subs.get(msg[1])?.onevent?.(msg[2], at);
    else if (msg[0] === 'EOSE') this.subs.get(msg[1])?.oneose?.();
    else if (msg[0] === 'COUNT') { const s = this.subs.get(msg[1]); this.subs.delete(msg[1]); s?.oncount?.(msg[2].count); }
    else if (msg[0] === 'CLOSED') { const s = this.subs.get(msg[1]); s?.onclosed?.(msg[2]); }
  }
  publish(ev) {
    return new Promise((resolve) => { this.waiting.set(ev.id, resolve); this.ws.send(JSON.stringify(['EVENT', ev])); });
  }
  subscribe(filters, handlers) {
    const id = `s${++this.n}`;
    this.subs.set(id, handlers);
    this.ws.send(JSON.stringify(['REQ', id, ...filters]));
    return id;
  }
  count(filters) {
    const id = `c${++this.n}`;
    return new Promise((resolve, reject) => {
      this.subs.set(id, { oncount: resolve, onclosed: (m) => reject(new Error(`COUNT closed: ${m}`)) });
      this.ws.send(JSON.stringify(['COUNT', id, ...filters]));
    });
  }
  close() { try { this.ws.close(); } catch {} }
}

/**
 * Publishes `groups` (arrays of events) keeping `window` groups in flight; the events of one group
 * go one after the other, each after the previous one's OK, so that a comment never reaches the
 * relay before the issue it depends on. Returns send timestamps by id and the refusals.
 */
async function publishAll(conn, groups, window = opt.window) {
  const sentAt = new Map();
  const refused = [];
  let next = 0;
  async function worker() {
    while (next < groups.length) {
      const group = groups[next++];
      for (const ev of Array.isArray(group) ? group : [group]) {
        sentAt.set(ev.id, performance.timeOrigin + performance.now());
        const [ok, message] = await conn.publish(ev);
        if (!ok) refused.push(`${ev.kind} ${ev.id.slice(0, 8)}: ${message}`);
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, window) }, worker));
  return { sentAt, refused };
}

/** Splits a conversation into [issue, its comments...] groups. */
function threads(events) {
  const out = [];
  for (const ev of events) (ev.kind === 1111 && out.length ? out[out.length - 1].push(ev) : out.push([ev]));
  return out;
}

// ---------- events ----------
const nowSecs = () => Math.floor(Date.now() / 1000);
const sign = (sk, kind, tags, content = '', at = nowSecs()) => finalizeEvent({ kind, created_at: at, tags, content }, sk);

function announcement(owner, d, ports, at) {
  const tags = [['d', d], ['name', d]];
  tags.push(['clone', ...ports.map((p) => `http://127.0.0.1:${p}/${getPublicKey(owner)}/${d}.git`)]);
  tags.push(['relays', ...ports.map((p) => `ws://127.0.0.1:${p}`)]);
  return sign(owner, 30617, tags, `repository ${d}`, at);
}

/**
 * Issues (1621, tagging the repository `a`) and NIP-22 comments (1111) on each issue; `at` is a
 * created_at or a function of the issue index giving one.
 */
function conversation(owner, d, issues, commentsPerIssue, authors, atOrFn) {
  const timeOf = typeof atOrFn === 'function' ? atOrFn : () => atOrFn;
  const address = `30617:${getPublicKey(owner)}:${d}`;
  const out = [];
  for (let i = 0; i < issues; i++) {
    const issue = sign(authors[i % authors.length], 1621,
      [['a', address], ['p', getPublicKey(owner)], ['subject', `issue ${i} of ${d}`]],
      `body of issue ${i} in ${d}: something does not work as expected`, timeOf(i));
    out.push(issue);
    for (let c = 0; c < commentsPerIssue; c++) {
      out.push(sign(authors[(i + c + 1) % authors.length], 1111,
        [['E', issue.id, '', issue.pubkey], ['K', '1621'], ['P', issue.pubkey],
         ['e', issue.id, '', issue.pubkey], ['k', '1621'], ['p', issue.pubkey]],
        `comment ${c} on issue ${i} of ${d}`, timeOf(i)));
    }
  }
  return out;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const fmt = (ms) => `${ms.toFixed(1)} ms`;

async function syncView(port) { return httpJson(port, '/api/sync'); }

/** True once `node`'s /api/sync lists every url in `urls` as connected. */
async function connectedTo(node, urls) {
  const view = await syncView(node.port);
  const status = new Map(view.relays.map((r) => [r.url.replace(/\/$/, ''), r.status]));
  return urls.every((u) => status.get(u) === 'connected');
}

// ---------- mode: cluster ----------
async function cluster() {
  const n = opt.nodes;
  if (n < 2) throw new Error('--nodes must be at least 2');
  const ports = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  const t0 = Date.now();
  const nodes = await Promise.all(ports.map((p, i) => startNode(`node${i + 1}`, p)));
  log(`started ${n} nodes on ports ${ports.join(', ')} in ${Date.now() - t0} ms`);

  const owner = generateSecretKey();
  const d = 'cluster-kit';
  const address = `30617:${getPublicKey(owner)}:${d}`;
  const repo = announcement(owner, d, ports, nowSecs() - 60);
  // The announcement goes to every node so that each one knows the repository (and its peers)
  // from the start; the workload goes to node 1 only and reaches the others through sync.
  const conns = nodes.map((node) => new Conn(node.port));
  await Promise.all(conns.map((c) => c.open()));
  for (const c of conns) {
    const [ok, message] = await c.publish(repo);
    if (!ok) throw new Error(`announcement refused by ${c.url}: ${message}`);
  }
  const urls = ports.map((p) => `ws://127.0.0.1:${p}`);
  const tMesh = Date.now();
  await Promise.all(nodes.map((node, i) =>
    waitFor(`${node.name} connected to its peers`, () => connectedTo(node, urls.filter((_, j) => j !== i)))));
  log(`every node connected to every other node in ${Date.now() - tMesh} ms`);

  // Workload: E events, one issue per (1 + comments) events, two comments per issue.
  const authors = Array.from({ length: 8 }, () => generateSecretKey());
  const commentsPerIssue = 2;
  const issues = Math.ceil(opt.events / (1 + commentsPerIssue));
  const workload = conversation(owner, d, issues, commentsPerIssue, authors, nowSecs()).slice(0, opt.events);
  const wanted = new Set(workload.map((e) => e.id));
  const kindOf = new Map(workload.map((e) => [e.id, e.kind]));

  // Live subscribers on nodes 2..N: everything of the repository, issues by `a`, comments by `E`.
  const received = nodes.map(() => new Map());
  const issueIds = workload.filter((e) => e.kind === 1621).map((e) => e.id);
  const since = nowSecs() - 120;
  await Promise.all(conns.slice(1).map((c, k) => new Promise((resolve) => {
    const seen = received[k + 1];
    const filters = [{ kinds: [1621], '#a': [address], since }];
    for (let i = 0; i < issueIds.length; i += 200) filters.push({ kinds: [1111], '#E': issueIds.slice(i, i + 200), since });
    // Several REQs so as not to exceed the node's filters-per-REQ limit.
    const groups = [];
    for (let i = 0; i < filters.length; i += 10) groups.push(filters.slice(i, i + 10));
    let eose = 0;
    for (const g of groups) c.subscribe(g, {
      onevent: (ev, at) => { if (wanted.has(ev.id) && !seen.has(ev.id)) seen.set(ev.id, at); },
      oneose: () => { if (++eose === groups.length) resolve(); },
    });
  })));

  const tPub = Date.now();
  const { sentAt, refused } = await publishAll(conns[0], threads(workload));
  const pubMs = Date.now() - tPub;
  log(`published ${workload.length} events to node1 in ${pubMs} ms (${Math.round(workload.length / (pubMs / 1000))} ev/s), ${refused.length} refused`);
  if (refused.length) log('refused:', refused.slice(0, 5).join('; '));
  const accepted = workload.length - refused.length;

  // Wait until every node has received everything live, or the deadline.
  try {
    await waitFor('every node receiving the workload', () => received.slice(1).every((m) => m.size >= accepted), opt.timeout * 1000, 50);
  } catch (e) { log(e.message); }

  const countFilters = [{ kinds: [1621], '#a': [address] }, { kinds: [1111], '#E': issueIds }];
  let lossTotal = 0;
  const lines = [];
  lines.push(`cluster kit: ${n} nodes, ${workload.length} events (${issues} issues + comments) published to node1 (${nodes[0].port})`);
  lines.push(`publish: ${pubMs} ms, ${refused.length} refused`);
  for (let k = 1; k < n; k++) {
    const lat = [];
    const latByKind = { 1621: [], 1111: [] };
    for (const [id, at] of received[k]) { const v = at - sentAt.get(id); lat.push(v); latByKind[kindOf.get(id)].push(v); }
    lat.sort((a, b) => a - b);
    for (const v of Object.values(latByKind)) v.sort((a, b) => a - b);
    let stored;
    try { stored = await conns[k].count(countFilters); } catch (e) { stored = `error (${e.message})`; }
    const lost = accepted - (typeof stored === 'number' ? stored : 0);
    lossTotal += Math.max(0, lost);
    lines.push(`${nodes[k].name} (${nodes[k].port}): live ${received[k].size}/${accepted}, stored (COUNT) ${stored}, lost ${lost}; ` +
      `latency p50 ${fmt(percentile(lat, 50))} p99 ${fmt(percentile(lat, 99))} max ${fmt(lat[lat.length - 1] ?? NaN)}; ` +
      `issues p50 ${fmt(percentile(latByKind[1621], 50))} p99 ${fmt(percentile(latByKind[1621], 99))}, ` +
      `comments p50 ${fmt(percentile(latByKind[1111], 50))} p99 ${fmt(percentile(latByKind[1111], 99))}`);
  }
  lines.push(lossTotal === 0 && refused.length === 0 ? 'RESULT: no loss' : `RESULT: LOSS ${lossTotal} events, ${refused.length} refused`);
  console.log(lines.join('\n'));
  conns.forEach((c) => c.close());
  return lossTotal === 0 && refused.length === 0 ? 0 : 1;
}

/**
 * `opt.repos` repositories listing the nodes on `ports`, each with `opt.issues` issues and
 * `opt.comments` comments per issue, by 10 owners and 20 authors, from `at` on. One second per
 * thread: real histories spread over time.
 */
function repositories(ports, at) {
  const owners = Array.from({ length: 10 }, () => generateSecretKey());
  const authors = Array.from({ length: 20 }, () => generateSecretKey());
  const events = [];
  for (let r = 0; r < opt.repos; r++) {
    const owner = owners[r % owners.length];
    const d = `repo-${r}`;
    events.push(announcement(owner, d, ports, at));
    events.push(...conversation(owner, d, opt.issues, opt.comments, authors, (i) => at + 1 + r * opt.issues + i));
  }
  return events;
}

/**
 * The bytes the node's open connections to 127.0.0.1:`port` received from it on the wire (TCP
 * payload: WebSocket frames as sent, compressed or not), from the kernel's own count (`ss -ti`,
 * tcpi_bytes_received). Connections already closed (the NIP-11 fetch) are not counted.
 */
function wireBytesFrom(port) {
  const r = spawnSync('ss', ['-tinH', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  return [...r.stdout.matchAll(/bytes_received:(\d+)/g)].reduce((s, m) => s + Number(m[1]), 0);
}

/**
 * The peer of fullsync and catchup: graspd loaded with `events` (`graspd import`), or with
 * `--strfry PATH` a strfry relay loaded with them (`strfry import`, its defaults otherwise).
 */
async function startPeer(port, events) {
  if (!opt.strfry) return startNode('peer', port, { NGIT_SYNC_ENABLED: 'false' }, importedDir('peer', events));
  const dir = nodeDir('strfry');
  mkdirSync(join(dir, 'db'));
  const conf = join(dir, 'strfry.conf');
  writeFileSync(conf, `db = "${join(dir, 'db')}/"\nevents { rejectEventsOlderThanSeconds = 946080000 }\n` +
    `relay { bind = "127.0.0.1"\n port = ${port}\n nofiles = 0\n }\n`);
  const jsonl = events.map((e) => JSON.stringify(e)).join('\n') + '\n';
  const r = spawnSync(opt.strfry, [`--config=${conf}`, 'import'], { input: jsonl, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`strfry import failed: ${r.stderr}`);
  const child = spawn(opt.strfry, [`--config=${conf}`, 'relay'], { stdio: 'ignore' });
  children.push(child);
  await waitFor('strfry relay listening', async () => {
    try { return (await fetch(`http://127.0.0.1:${port}/`, { headers: { Accept: 'application/nostr+json' } })).ok; } catch { return false; }
  }, 20000);
  return { name: 'strfry', port, pid: child.pid, child, dir };
}

/** CPU time (utime + stime) of process `pid` so far, in ms. */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;  // fields 14 and 15, in 10 ms ticks
}

// ---------- mode: fullsync ----------
async function fullsync() {
  // Signing takes minutes: the events (and the ports they name) come from --events-cache when
  // given, and the peer loads them with `graspd import`; only the fresh node's sync is timed.
  const { ports, events } = await catchupEvents();
  const [peerPort, freshPort] = ports;
  const peer = await startPeer(peerPort, events);
  const storedBytes = events.reduce((s, e) => s + Buffer.byteLength(JSON.stringify(e)), 0);
  log(`peer holds ${events.length} events (${storedBytes} bytes of JSON)`);

  // The fresh node learns the repositories from the peer as its bootstrap relay and pulls everything.
  const t0 = Date.now();
  const fresh = await startNode('fresh', freshPort, { NGIT_SYNC_BOOTSTRAP_RELAY_URL: `ws://127.0.0.1:${peerPort}` });
  const fc = new Conn(fresh.port);
  await fc.open();
  const all = [{ kinds: [30617] }, { kinds: [1621] }, { kinds: [1111] }];
  let stored = 0;
  await waitFor('the fresh node storing everything', async () => (stored = await fc.count(all)) >= events.length, opt.timeout * 1000, 100);
  const wallMs = Date.now() - t0;
  const cpu = { peer: cpuMs(peer.pid), node: cpuMs(fresh.pid) };
  await sleep(3000);  // steady state: pending batches confirmed, subscriptions settled
  const view = await syncView(fresh.port);
  const relays = view.relays.map((r) => ({ url: r.url, status: r.status, open_subscriptions: r.open_subscriptions,
    open_filters: r.open_filters, pending_batches: r.pending_batches, bytes_received: r.bytes_received,
    events_received: r.events_received, events_stored: r.events_stored, history_method: r.history_method,
    ids_needed: r.ids_needed, negentropy_rounds: r.negentropy_rounds, id_requests: r.id_requests, pages: r.pages }));
  const bytes = view.relays.reduce((s, r) => s + r.bytes_received, 0);
  console.log(`fullsync: ${opt.repos} repositories x ${opt.issues} issues x ${opt.comments} comments = ${events.length} events`);
  console.log(`wall time from fresh start until all stored: ${wallMs} ms (stored ${stored})`);
  console.log(`cpu until all stored: peer ${cpu.peer} ms, node ${cpu.node} ms`);
  console.log(`bytes received ${bytes} / stored event JSON ${storedBytes} = ${(bytes / storedBytes).toFixed(3)}`);
  const wire = wireBytesFrom(peerPort);
  console.log(`wire bytes received ${wire} / stored event JSON ${storedBytes} = ${(wire / storedBytes).toFixed(3)}` +
    ` (compression ${view.relays.map((r) => r.compression).join(',')})`);
  console.log(JSON.stringify(relays, null, 1));
  fc.close();
  return 0;
}

// ---------- mode: catchup ----------
/** A data directory holding `events`, loaded with `graspd import` (ids and signatures checked). */
function importedDir(name, events) {
  const dir = nodeDir(name);
  const jsonl = events.map((e) => JSON.stringify(e)).join('\n') + '\n';
  const r = spawnSync(opt.binary, ['import', '--data', join(dir, 'relay')], { input: jsonl, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`import into ${name} failed: ${r.stderr}`);
  return dir;
}

/** Signing 100,000 events takes minutes: a cache keeps them, with the ports they name. */
async function catchupEvents() {
  if (opt.events_cache && existsSync(opt.events_cache)) {
    const cached = JSON.parse(readFileSync(opt.events_cache, 'utf8'));
    log(`reusing ${cached.events.length} signed events from ${opt.events_cache}`);
    return cached;
  }
  const ports = [await freePort(), await freePort()];
  const events = repositories(ports, nowSecs() - 7200 - opt.repos * opt.issues);
  if (opt.events_cache) writeFileSync(opt.events_cache, JSON.stringify({ ports, events }));
  return { ports, events };
}

function missingEvents(events) {
  if (opt.missing === 'spread') return events.filter((e, i) => e.kind !== 30617 && i % opt.missing_every === 0);
  if (opt.missing !== 'recent') throw new Error(`--missing ${opt.missing}: spread or recent`);
  const threads = events.filter((e) => e.kind !== 30617).sort((a, b) => b.created_at - a.created_at);
  return threads.slice(0, Math.floor(threads.length / opt.missing_every));
}

async function catchup() {
  const { ports, events } = await catchupEvents();
  const [peerPort, freshPort] = ports;
  // The node lacks every M-th issue or comment (`--missing spread`, the worst case for range-based
  // reconciliation), or the newest 1/M of them (`--missing recent`: a node that was down while the
  // rest went on). Announcements are kept: it knows its repositories.
  const missing = missingEvents(events);
  const lacking = new Set(missing.map((e) => e.id));
  const missingBytes = missing.reduce((s, e) => s + Buffer.byteLength(JSON.stringify(e)), 0);
  const freshDir = importedDir('behind', events.filter((e) => !lacking.has(e.id)));
  log(`peer holds ${events.length} events; the node lacks ${missing.length} (${missingBytes} bytes of JSON)`);
  const peer = await startPeer(peerPort, events);
  const peerCpu0 = cpuMs(peer.pid);

  const t0 = Date.now();
  const node = await startNode('behind', freshPort, { NGIT_SYNC_BOOTSTRAP_RELAY_URL: `ws://127.0.0.1:${peerPort}` }, freshDir);
  const c = new Conn(node.port);
  await c.open();
  // Done once the missing events are stored: counted by id, a few thousand index lookups a poll
  // (a COUNT by kind would load all 100,000 records ten times a second, most of the node's CPU).
  const byId = [];
  for (let i = 0; i < missing.length; i += 2000) byId.push({ ids: missing.slice(i, i + 2000).map((e) => e.id) });
  const countMissing = async () => (await Promise.all(byId.map((f) => c.count([f])))).reduce((s, n) => s + n, 0);
  let found = 0;
  await waitFor('the node storing the missing events', async () => (found = await countMissing()) >= missing.length, opt.timeout * 1000, 100);
  const wallMs = Date.now() - t0;
  const cpu = { peer: cpuMs(peer.pid) - peerCpu0, node: cpuMs(node.pid) };
  const all = [{ kinds: [30617] }, { kinds: [1621] }, { kinds: [1111] }];
  const stored = await c.count(all);
  await sleep(3000);  // the last traffic report reaches /api/sync
  const view = await syncView(node.port);
  const peerView = view.relays.find((r) => r.url === `ws://127.0.0.1:${peerPort}`) || {};
  console.log(`catchup: ${events.length} events on the peer, ${missing.length} missing on the node (${missingBytes} bytes of JSON)`);
  console.log(`wall time from the node's start until all stored: ${wallMs} ms (stored ${stored})`);
  console.log(`cpu until all stored: peer ${cpu.peer} ms, node ${cpu.node} ms`);
  console.log(`bytes received ${peerView.bytes_received} = ${(peerView.bytes_received / missingBytes).toFixed(2)} x the missing events' JSON`);
  const wire = wireBytesFrom(peerPort);
  console.log(`wire bytes received ${wire} = ${(wire / missingBytes).toFixed(2)} x the missing events' JSON` +
    ` (compression ${peerView.compression})`);
  console.log(`history_method ${peerView.history_method}, events_received ${peerView.events_received}, ` +
    `events_known ${peerView.events_known}, ids_needed ${peerView.ids_needed}, negentropy_rounds ${peerView.negentropy_rounds}, ` +
    `id_requests ${peerView.id_requests}, pages ${peerView.pages}`);
  c.close();
  return 0;
}

// ---------- mode: memory ----------
function rssBytes(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]) * 1024;
}
async function memory() {
  const port = await freePort();
  const node = await startNode('mem', port);
  await sleep(1000);
  const before = rssBytes(node.pid);
  const owners = Array.from({ length: 100 }, () => generateSecretKey());
  const at = nowSecs() - 60;
  const events = [];
  for (let r = 0; r < opt.repos; r++) {
    const peers = [`ws://127.0.0.1:${port}`, `wss://peer-${r % 50}.example.com`, `wss://relay-${r % 7}.example.org`];
    const owner = owners[r % owners.length];
    const d = `repo-${r}`;
    events.push(sign(owner, 30617, [['d', d], ['clone', `http://127.0.0.1:${port}/${getPublicKey(owner)}/${d}.git`],
      ['relays', ...peers]], `repository ${d}`, at));
  }
  const c = new Conn(port);
  await c.open();
  const { refused } = await publishAll(c, events);
  if (refused.length) throw new Error(`refused ${refused.length}: ${refused[0]}`);
  await waitFor('sync tracking every repository', async () => (await syncView(port)).repositories >= opt.repos, 60000, 250);
  await sleep(5000);
  const after = rssBytes(node.pid);
  const view = await syncView(port);
  console.log(`memory: ${opt.repos} repositories tracked (api/sync repositories=${view.repositories}, relays=${view.relays.length})`);
  console.log(`VmRSS before ${(before / 1048576).toFixed(1)} MiB, after ${(after / 1048576).toFixed(1)} MiB, ` +
    `delta ${((after - before) / 1048576).toFixed(1)} MiB = ${((after - before) / opt.repos * 10000 / 1048576).toFixed(1)} MiB per 10,000 repositories`);
  c.close();
  return 0;
}

const kit = { opt, log, sleep, freePort, startNode, waitFor, Conn, publishAll, sign, announcement, rssBytes };
const modes = { cluster, fullsync, catchup, memory, plus: () => plus(kit) };
if (!modes[mode]) { console.error(`unknown mode ${mode}`); process.exit(2); }
modes[mode]().then((code) => { cleanup(); process.exit(code); },
  (e) => { console.error(`[kit] error: ${e.stack || e.message}`); cleanup(); process.exit(1); });
