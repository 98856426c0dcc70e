// What deploy/cluster/load.mjs (the load figures) and tests/cluster/cluster_fault_test.mjs (the
// ctest fault test) share: a graspd node's environment behind the balancer, starting a node and
// waiting for its /healthz, killing it, and HAProxy started from deploy/cluster/render-haproxy.sh
// (docs/operations.md, "Running a cluster"). Plain Node: no modules from tests/interop.
//
// A node is an object { name, port, dir, child, stderr }: `dir` holds its data (created on start),
// `child` is its graspd process, `stderr` ({ text }) the end of what graspd wrote there. The callers
// own the set of child processes they kill on exit, and decide what a node that does not start means.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';

const here = dirname(fileURLToPath(import.meta.url));

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A TCP port free on 127.0.0.1 right now, below Linux's ephemeral range (32768-60999): a port from
 * that range can be taken by any process binding port 0 or opening a connection before the node
 * binds it; here only another caller's random pick can.
 */
export async function freePort() {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    const bound = await new Promise((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (bound) return port;
  }
}

/** Polls `fn` until it returns a truthy value or `ms` pass; the last value (falsy on timeout). */
export async function waitFor(fn, ms, everyMs = 100) {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() >= until) return v;
    await sleep(everyMs);
  }
}

/** Keeps the last `max` characters written to `streams` in `buf.text`; `buf`. */
export function tail(streams, max = 16384, buf = { text: '' }, onData = () => {}) {
  for (const stream of [streams].flat())
    stream.on('data', (c) => { const text = c.toString(); buf.text = (buf.text + text).slice(-max); onData(text); });
  return buf;
}

// Every client arrives from the balancer's address: the per-address bounds are switched off, as
// deploy/cluster/start.sh does (docs/operations.md, "Per-address limits").
export const perAddressLimits = {
  NGIT_MAX_CONNECTIONS_PER_IP: '0',
  NGIT_GIT_MAX_CONNECTIONS_PER_IP: '0',
  NGIT_GIT_MAX_PROCESSES_PER_IP: '0',
  NGIT_GIT_PUSHES_PER_MINUTE_PER_IP: '0',
  NGIT_NEGENTROPY_ADDRESS_SHARE_PERCENT: '100',
  NGIT_NEGENTROPY_ADDRESS_SCAN_RATE: '0',
  NGIT_NEGENTROPY_SCAN_QUEUE_PER_ADDRESS: '1024',
  NGIT_PURGATORY_ADDRESS_SHARE_PERCENT: '100',
};

/**
 * graspd's whole environment for `node` (nothing inherited but PATH, so no stray NGIT_* from the
 * caller's): policy grasp01, purgatory and sync on, Sync+ off, NGIT_DOMAIN `balancer` (host:port),
 * NGIT_SYNC_PEERS `peers` (comma-separated ws:// URLs), log level warn; `extra` added last.
 */
export function nodeEnvironment(node, { balancer, peers, extra = {} }) {
  return {
    PATH: process.env.PATH,
    HOME: node.dir,
    ...perAddressLimits,
    NGIT_BIND_ADDRESS: `127.0.0.1:${node.port}`,
    NGIT_DOMAIN: balancer,
    NGIT_SYNC_PEERS: peers,
    NGIT_RELAY_DATA_PATH: join(node.dir, 'relay'),
    NGIT_GIT_DATA_PATH: join(node.dir, 'git'),
    NGIT_RELAY_OWNER_NSEC_FILE: join(node.dir, 'relay-owner.nsec'),
    NGIT_ACCEPTANCE_POLICY: 'grasp01',
    NGIT_PURGATORY_ENABLED: 'true',
    NGIT_SYNC_ENABLED: 'true',
    NGIT_SYNC_PLUS_ENABLED: 'false',
    // The default reconnect backoff: a peer that is down is dialled again every 5 s (no
    // doubling for peers), which the 15 s after a restart must cover.
    NGIT_LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** Starts (or restarts, same data and port) graspd `binary` for `node` with `env`; its child, added to `children`. */
export function spawnNode(binary, node, env, children) {
  mkdirSync(node.dir, { recursive: true });
  const child = spawn(binary, [], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  node.child = child;
  const previous = node.stderr?.text ?? '';
  node.stderr = tail(child.stderr);
  if (previous) node.stderr.text = `${previous}\n--- restarted ---\n`;
  return child;
}

/** Polls `node`'s /healthz every `everyMs` for `ms`: true once it answers 200, 'exited' if graspd exited, else false. */
export function waitForHealthy(node, ms, everyMs) {
  const { child } = node;
  return waitFor(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return 'exited';
    try { return (await fetch(`http://127.0.0.1:${node.port}/healthz`)).status === 200; } catch { return false; }
  }, ms, everyMs);
}

/** Kills `node`'s graspd with SIGKILL; resolves once it has exited. */
export async function killNode(node) {
  const exited = new Promise((r) => (node.child.exitCode !== null ? r() : node.child.once('exit', r)));
  node.child.kill('SIGKILL');
  await exited;
}

/**
 * Renders haproxy.cfg into `dir` (render-haproxy.sh --maxconn 1000, `balancer` as BIND, the nodes'
 * `addresses` in order), checks it with `haproxy -c` (throws when either fails) and starts `binary`
 * on it in the foreground (-db). Its stdout and stderr, the notices (server UP/DOWN) and alerts, go
 * to `out.text` (the last 1 MB) and to `onData`. The process, added to `children`.
 */
export function startHaproxy(binary, { balancer, addresses, dir, children, out = { text: '' }, onData }) {
  const render = spawnSync('bash', [join(here, 'render-haproxy.sh'), '--maxconn', '1000', balancer, ...addresses],
    { encoding: 'utf8' });
  if (render.status !== 0) throw new Error(`render-haproxy.sh failed: ${render.stderr}`);
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(cfg, render.stdout);
  const check = spawnSync(binary, ['-c', '-q', '-f', cfg], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`haproxy -c refused the rendered configuration:\n${check.stdout}${check.stderr}`);
  const haproxy = spawn(binary, ['-f', cfg, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(haproxy);
  tail([haproxy.stdout, haproxy.stderr], 1_000_000, out, onData);
  return haproxy;
}

/**
 * Kills every child and removes `dir` once, on exit, on `signals` and on an uncaught error
 * (reported through `report(text)`); returns that cleanup for the caller's own exits.
 */
export function cleanupOnExit(children, dir, { signals = ['SIGINT', 'SIGTERM'], log, report }) {
  let cleaned = false;
  const cleanup = () => {
    if (cleaned) return;
    cleaned = true;
    for (const c of children) if (c.exitCode === null && c.signalCode === null) { try { c.kill('SIGKILL'); } catch {} }
    try { rmSync(dir, { recursive: true, force: true }); } catch {}
  };
  const die = () => { cleanup(); process.exit(1); };
  process.on('exit', cleanup);
  for (const sig of signals) process.on(sig, () => { log(`stopped by ${sig}`); die(); });
  process.on('uncaughtException', (e) => { report(e.stack || e); die(); });
  process.on('unhandledRejection', (e) => { report(e?.stack || e); die(); });
  return cleanup;
}
