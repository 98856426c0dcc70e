// Clone benchmark of graspd's git hosting against nginx + fcgiwrap + `git http-backend` (what
// ngit-relay ships) on the same machine. Run through tests/bench/git_clone_bench.sh.
//
//   node tests/bench/git_clone_bench.mjs --binary build/default/graspd [--mb 50] [--reps 5]
//       [--clients 20] [--rounds 2] [--events 300] [--idle-reqs 200] [--probe-ms 50]
//       [--git-max-processes 32] [--fcgiwrap-processes 32] [--nginx auto|0|PATH]
//       [--fcgiwrap auto|PATH] [--keep 0]
//
// 1. Builds a deterministic repository: 50 commits editing a text file, every 5th adding
//    incompressible 1 MiB blobs (AES-CTR of zeros under a fixed key) until --mb MiB; same
//    commit ids on every run.
// 2. Hosts it in graspd as a user would: announcement, state, push (purgatory on: both events are
//    held until the push releases them), then --events issues (kind 1621) for the REQ probe. The
//    pushed bare repository is copied under nginx's GIT_PROJECT_ROOT, so both servers serve the
//    same files.
// 3. Starts nginx (a minimal nginx.conf of its own in the work directory: 127.0.0.1, its own pid,
//    log and temp paths) passing git's URLs to `git http-backend` through a fcgiwrap it starts on
//    a unix socket (--fcgiwrap-processes preforked processes). Skipped, saying so, when nginx or
//    fcgiwrap is not installed (or with --nginx 0): graspd is then measured alone.
// 4. One clone at a time, alternating the servers, --reps times: wall time, server CPU.
//    --clients concurrent `git clone --no-checkout`, --rounds times per server, alternated:
//    total wall time, per-clone p50/max, server CPU, peak memory, and the latency of one REQ
//    (the issues, every --probe-ms) on graspd's WebSocket while they run, against idle.
// Server CPU = utime+stime+cutime+cstime from /proc/<pid>/stat summed over the server's lasting
// processes (graspd; nginx's master and workers and the fcgiwrap processes): their own work plus
// their reaped children (upload-pack, pack-objects; http-backend under fcgiwrap), read once no
// short-lived child is left.
import { spawn, spawnSync } from 'node:child_process';
import { createCipheriv, createHash } from 'node:crypto';
import { accessSync, appendFileSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync,
  writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childrenCpuMs, cpuMs, parseOptions, percentile, procStat, requireInterop } from '../load/bench_common.mjs';

const WebSocket = requireInterop('ws');
const { finalizeEvent, getPublicKey } = requireInterop('nostr-tools/pure');
const { npubEncode } = requireInterop('nostr-tools/nip19');

const usage =
  'usage: git_clone_bench.mjs --binary GRASPD [--mb N] [--reps N] [--clients N] [--rounds N] ' +
  '[--events N] [--idle-reqs N] [--probe-ms MS] [--git-max-processes N] [--fcgiwrap-processes N] ' +
  '[--nginx auto|0|PATH] [--fcgiwrap auto|PATH] [--keep 0|1]';
const opt = parseOptions(
  { binary: '', mb: 50, reps: 5, clients: 20, rounds: 2, events: 300, 'idle-reqs': 200, 'probe-ms': 50,
    'git-max-processes': 32, 'fcgiwrap-processes': 32, nginx: 'auto', fcgiwrap: 'auto', keep: 0 },
  usage);
if (!opt.binary) {
  console.error(usage);
  process.exit(2);
}

const work = mkdtempSync(join(process.env.GRASPD_BENCH_TMP || tmpdir(), 'git-clone-bench-'));
const children = [];
function cleanup() {
  for (const c of children) {
    if (c.exitCode !== null) continue;
    // nginx and fcgiwrap run in process groups of their own: the group takes their workers along.
    try { process.kill(c.group ? -c.pid : c.pid, 'SIGKILL'); } catch { /* gone */ }
  }
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

/** Starts a server process and waits until `ready()` is true; `group`: in a process group of its own. */
async function startProcess(name, command, args, env, ready, group = false) {
  const child = spawn(command, args,
    { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'], detached: group });
  child.group = group;
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
/** `pid` and all its descendants. */
function descendants(pid, tree = processTree()) {
  return [pid, ...(tree.get(pid) || []).flatMap((child) => descendants(child, tree))];
}
// A server: the processes it was started as (`roots`) and, in `pids`, those and the ones that last
// as long as they do (nginx's workers, fcgiwrap's preforked processes); anything else below them is
// a short-lived git child.
/** Waits until the server has reaped every short-lived child, so cutime/cstime hold their CPU. */
async function settle(server) {
  const lasting = new Set(server.pids);
  const until = Date.now() + 30000;
  for (;;) {
    const tree = processTree();
    const extra = server.roots.flatMap((pid) => descendants(pid, tree)).filter((pid) => !lasting.has(pid));
    if (extra.length === 0) return;
    if (Date.now() > until) throw new Error(`children ${extra.join(' ')} of ${server.name} still running after 30 s`);
    await sleep(20);
  }
}
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
/**
 * CPU of the server's lasting processes: `self` their own, `all` with their reaped children's and what
 * the server's `childCpuMs()` adds (children whose parent ignores SIGCHLD leave no cutime behind).
 */
const serverCpu = (server) => {
  const self = sum(server.pids.map(cpuMs));
  return { self, all: self + sum(server.pids.map(childrenCpuMs)) + (server.childCpuMs?.() ?? 0) };
};
function rssBytes(pid) {
  try { return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * 4096; } catch { return 0; }
}
/** Resident memory of the server's processes and all their children. */
function treeRssBytes(server) {
  const tree = processTree();
  return sum(server.roots.flatMap((pid) => descendants(pid, tree)).map(rssBytes));
}
const vmHwmBytes = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
/** Resets the peak resident memory (VmHWM) of the server's lasting processes. */
const resetHwm = (server) => server.pids.forEach((pid) => writeFileSync(`/proc/${pid}/clear_refs`, '5'));
const serverHwmBytes = (server) => sum(server.pids.map(vmHwmBytes));

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
  const graspdServer = { name: 'graspd', roots: [graspd.pid], pids: [graspd.pid], url };
  const before = serverCpu(graspdServer);
  t0 = now();
  git(['push', '-q', url, 'main'], join(work, 'src'));
  const pushMs = now() - t0;
  await settle(graspdServer);
  const pushCpu = serverCpu(graspdServer).all - before.all;
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
  log(`pushed in ${(pushMs / 1000).toFixed(2)} s (graspd CPU ${pushCpu} ms); repository: ${layout.join(', ')}`);
  const servers = [graspdServer];
  const nginx = await startNginx(repo, `/${npub}/${d}.git`);
  if (nginx) servers.push(nginx);
  return { head, relay, pushMs, pushCpu, layout, servers };
}

// ---------- nginx + fcgiwrap + git http-backend ----------
function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
/** `name` as an executable file on PATH or in the sbin directories (not on a user's PATH), or ''. */
function findProgram(name) {
  const dirs = [...(process.env.PATH || '').split(':'), '/usr/sbin', '/usr/local/sbin', '/sbin'];
  return dirs.filter(Boolean).map((dir) => join(dir, name)).find(executable) || '';
}
/** --nginx / --fcgiwrap: auto (looked up), 0 (none) or a path; '' when there is no such program. */
function programOption(value, name) {
  if (value === 'auto') return findProgram(name);
  return value !== '0' && executable(value) ? value : '';
}

/**
 * What ngit-relay ships (its src/nginx.conf, fcgiwrap under spawn-fcgi): one location passing the
 * repository's URLs to `git http-backend` through fcgiwrap, every repository under GIT_PROJECT_ROOT
 * exported. Request bodies go to fcgiwrap as they arrive (fastcgi_request_buffering off); answers are
 * buffered by nginx as ngit-relay leaves them (its temp files in the work directory). `backend` is the
 * CPU-recording wrapper of git http-backend (cgiWrapper).
 */
function nginxConf(dir, port, socket, projectRoot, backend) {
  const user = process.getuid?.() === 0 ? 'user root root;\n' : ''; // workers that can read the root-owned files
  return `${user}worker_processes auto;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;
    location ~ ^/npub1([a-z0-9]+)/([^/]+\\.git)(/.*)?$ {
      fastcgi_pass unix:${socket};
      fastcgi_request_buffering off;
      fastcgi_param REQUEST_METHOD $request_method;
      fastcgi_param QUERY_STRING $query_string;
      fastcgi_param CONTENT_TYPE $content_type;
      fastcgi_param CONTENT_LENGTH $content_length;
      fastcgi_param SERVER_PROTOCOL $server_protocol;
      fastcgi_param GATEWAY_INTERFACE CGI/1.1;
      fastcgi_param REMOTE_ADDR $remote_addr;
      fastcgi_param SCRIPT_FILENAME ${backend};
      fastcgi_param PATH_INFO /npub1$1/$2$3;
      fastcgi_param GIT_PROJECT_ROOT ${projectRoot};
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param HOME ${gitEnv.HOME};
      fastcgi_param GIT_CONFIG_NOSYSTEM 1;
    }
  }
}
`;
}

/**
 * fcgiwrap ignores SIGCHLD, so the CPU of the `git http-backend` it runs (and of that one's upload-pack
 * and pack-objects, which it waits for) is in nobody's cutime. The CGI program nginx names is therefore
 * a shell that runs git http-backend and then appends its children's CPU (`times`, second line) to a
 * file of its own pid; the shell's own CPU (~1 ms a request) is not counted.
 */
function cgiWrapper(dir, backend) {
  const cpuDir = join(dir, 'cgi-cpu');
  mkdirSync(cpuDir, { recursive: true });
  const wrapper = join(dir, 'git-http-backend.sh');
  writeFileSync(wrapper, `#!/bin/sh\n'${backend}'\nstatus=$?\ntimes >> '${cpuDir}'/$$\nexit $status\n`, { mode: 0o755 });
  const seconds = (token) => { const [, m, sec] = /(\d+)m([\d.]+)s/.exec(token); return Number(m) * 60 + Number(sec); };
  /** The children's user + system time over every request so far, in ms. */
  const cpu = () => sum(readdirSync(cpuDir).flatMap((name) => readFileSync(join(cpuDir, name), 'utf8')
    .trim().split('\n').filter((line, i) => i % 2 === 1) // `times`: the shell's line, then its children's
    .map((line) => line.trim().split(/\s+/).map(seconds).reduce((a, b) => a + b, 0) * 1000)));
  return { wrapper, cpu };
}

/**
 * nginx's workers and fcgiwrap's preforked processes: the children of `roots`, once none of them has a
 * child (a CGI request) left.
 */
async function lastingBelow(roots) {
  const until = Date.now() + 10000;
  for (;;) {
    const tree = processTree();
    const direct = roots.flatMap((pid) => tree.get(pid) || []);
    if (!direct.some((pid) => tree.has(pid))) return [...roots, ...direct];
    if (Date.now() > until) throw new Error('nginx or fcgiwrap still has a git child after 10 s');
    await sleep(20);
  }
}

/** nginx + fcgiwrap serving a copy of `repo` at `path`; null, saying why, when either is missing. */
async function startNginx(repo, path) {
  const nginx = programOption(opt.nginx, 'nginx');
  const fcgiwrap = programOption(opt.fcgiwrap, 'fcgiwrap');
  if (!nginx || !fcgiwrap) {
    log(`${opt.nginx === '0' ? '--nginx 0' : `${nginx ? 'fcgiwrap' : 'nginx'} not found`}: the comparison ` +
      'against nginx + fcgiwrap + git http-backend is skipped; graspd alone is measured');
    return null;
  }
  const dir = join(work, 'nginx');
  const backend = cgiWrapper(dir, join(git(['--exec-path']), 'git-http-backend'));
  const projectRoot = join(dir, 'repos');
  const target = join(projectRoot, ...path.split('/').slice(1, -1));
  mkdirSync(target, { recursive: true });
  const copied = spawnSync('cp', ['-a', repo, target]);
  if (copied.status !== 0) throw new Error(`cp: ${copied.stderr}`);
  const socket = join(dir, 'fcgiwrap.sock');
  const fcgi = await startProcess('fcgiwrap', fcgiwrap,
    ['-c', String(opt['fcgiwrap-processes']), '-s', `unix:${socket}`], {}, async () => existsSync(socket), true);
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConf(dir, port, socket, projectRoot, backend.wrapper));
  const url = `http://127.0.0.1:${port}${path}`;
  const server = await startProcess('nginx', nginx, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log'),
    '-g', 'daemon off; master_process on;'], {}, async () => {
    const r = await fetch(`${url}/info/refs?service=git-upload-pack`);
    return r.status === 200; // nginx up, fcgiwrap and git http-backend answering
  }, true);
  const roots = [server.pid, fcgi.pid];
  const pids = await lastingBelow(roots);
  log(`nginx (${nginx}) and fcgiwrap (${fcgiwrap}, ${opt['fcgiwrap-processes']} processes) on ${url}: ` +
    `${pids.length} lasting processes`);
  return { name: 'nginx+fcgiwrap', roots, pids, url, childCpuMs: backend.cpu };
}

// ---------- measurements ----------
let cloneN = 0;
async function cloneOnce(server, head) {
  const dest = join(work, `clone-${++cloneN}`);
  await settle(server);
  const c0 = serverCpu(server);
  const r = await gitAsync(['clone', '-q', server.url, dest]);
  await settle(server);
  const c1 = serverCpu(server);
  if (r.code !== 0) throw new Error(`clone from ${server.name} failed: ${r.stderr}`);
  if (git(['rev-parse', 'HEAD'], dest) !== head) throw new Error(`clone from ${server.name}: wrong HEAD`);
  rmSync(dest, { recursive: true, force: true });
  return { ms: r.ms, cpu: c1.all - c0.all, self: c1.self - c0.self };
}

const latencySummary = (sorted) => ({ n: sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90),
  p99: percentile(sorted, 99), all: sorted });

async function concurrentRound(server, graspdPid, relay) {
  await settle(server);
  resetHwm(server);
  const c0 = serverCpu(server);
  const g0 = cpuMs(graspdPid);
  let treePeak = 0;
  const sampler = setInterval(() => { treePeak = Math.max(treePeak, treeRssBytes(server)); }, 100);
  const req = probe(relay, opt['probe-ms']);
  const t0 = now();
  const dests = Array.from({ length: opt.clients }, () => join(work, `clone-${++cloneN}`));
  const results = await Promise.all(dests.map((dest) => gitAsync(['clone', '-q', '--no-checkout', server.url, dest])));
  const totalMs = now() - t0;
  const latencies = await req.stop();
  clearInterval(sampler);
  await settle(server);
  const c1 = serverCpu(server);
  for (const dest of dests) rmSync(dest, { recursive: true, force: true });
  const failed = results.filter((r) => r.code !== 0);
  const walls = results.map((r) => r.ms).sort((a, b) => a - b);
  return {
    totalMs, p50: percentile(walls, 50), max: walls[walls.length - 1], failed: failed.length,
    failure: (failed[0]?.stderr || '').split('\n').join(' / '), cpu: c1.all - c0.all,
    graspdSelf: cpuMs(graspdPid) - g0, hwm: serverHwmBytes(server), treePeak, req: latencySummary(latencies),
  };
}

const median = (xs) => percentile([...xs].sort((a, b) => a - b), 50);
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
const mib = (b) => `${(b / 1048576).toFixed(0)} MiB`;
const ms2 = (x) => `${x.toFixed(2)} ms`;
const reqText = (r) => `${ms2(r.p50)} / ${ms2(r.p90)} / ${ms2(r.p99)} (n=${r.n})`;

async function main() {
  const setupResult = await setup();
  const { head, relay, servers } = setupResult;
  const [graspd] = servers;
  const report = { command: process.argv.slice(1).join(' '), loadStart: loadavg(), git: git(['--version']),
    push: { ms: setupResult.pushMs, cpu: setupResult.pushCpu }, layout: setupResult.layout };

  const idle = probe(relay, opt['probe-ms'], opt['idle-reqs']);
  report.idleReq = latencySummary(await idle.done);
  log(`idle REQ (${opt.events} events): p50 / p90 / p99 ${reqText(report.idleReq)}`);

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
      const load = loadavg();
      const r = await concurrentRound(sv, graspd.pids[0], relay);
      concurrent[sv.name].push(r);
      log(`${opt.clients} clones ${round + 1} ${sv.name}: total ${s(r.totalMs)}, p50 ${s(r.p50)}, max ${s(r.max)}, ` +
        `failed ${r.failed}${r.failed ? ` (${r.failure})` : ''}, server CPU ${r.cpu} ms, ` +
        `HWM ${mib(r.hwm)}, tree peak ${mib(r.treePeak)}, REQ p50 / p90 / p99 ${reqText(r.req)}; ` +
        `load ${load} -> ${loadavg()}`);
    }
  }
  relay.close();
  report.loadEnd = loadavg();

  console.log(`\n${report.git}; ${opt.mb} MiB of blobs, HEAD ${head}; pushed to graspd in ${s(report.push.ms)} ` +
    `(graspd CPU with its git: ${report.push.cpu} ms); graspd repository after the push: ${report.layout.join(', ')}`);
  console.log(`load average at start ${report.loadStart}, at end ${report.loadEnd}`);
  if (servers.length === 1) console.log('nginx + fcgiwrap not measured (not installed, or --nginx 0)');
  console.log(`\n| one clone, ${opt.reps} runs alternated | wall (median) | wall (runs) | server CPU (median) | of which the server processes |`);
  console.log('|---|---|---|---|---|');
  for (const sv of servers) {
    const rs = single[sv.name];
    console.log(`| ${sv.name} | ${s(median(rs.map((r) => r.ms)))} | ${rs.map((r) => (r.ms / 1000).toFixed(2)).join(' ')} | ` +
      `${median(rs.map((r) => r.cpu))} ms | ${median(rs.map((r) => r.self))} ms |`);
  }
  console.log(`\n| ${opt.clients} concurrent clones (--no-checkout), ${opt.rounds} rounds alternated | total wall | ` +
    'per-clone p50 | per-clone max | failed | server CPU | server peak RSS (own) | peak RSS with git children | ' +
    'REQ p50 / p90 / p99 on graspd during the round |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const sv of servers) {
    for (const r of concurrent[sv.name]) {
      console.log(`| ${sv.name} | ${s(r.totalMs)} | ${s(r.p50)} | ${s(r.max)} | ${r.failed} | ${r.cpu} ms | ` +
        `${mib(r.hwm)} | ${mib(r.treePeak)} | ${reqText(r.req)}; graspd CPU ${r.graspdSelf} ms |`);
    }
  }
  // Medians over the rounds; the REQ percentiles over every probe of the server's rounds together.
  console.log(`\n| medians over the rounds | total wall | server CPU | server peak RSS (own) | peak RSS with git children | ` +
    'REQ p50 / p90 / p99, all rounds |');
  console.log('|---|---|---|---|---|---|');
  console.log(`| idle (no clones) | | | | | ${reqText(report.idleReq)} |`);
  for (const sv of servers) {
    const rs = concurrent[sv.name];
    const pooled = latencySummary(rs.flatMap((r) => r.req.all).sort((a, b) => a - b));
    console.log(`| during ${sv.name}'s clones | ${s(median(rs.map((r) => r.totalMs)))} | ${median(rs.map((r) => r.cpu))} ms | ` +
      `${mib(median(rs.map((r) => r.hwm)))} | ${mib(median(rs.map((r) => r.treePeak)))} | ${reqText(pooled)} |`);
  }
  const failures = Object.values(concurrent).flat().reduce((n, r) => n + r.failed, 0);
  return failures === 0 ? 0 : 1;
}

main().then((code) => process.exit(code), (e) => {
  console.error(`[bench] error: ${e.stack || e.message}`);
  process.exit(1);
});
