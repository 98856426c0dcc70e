// NIP-77 cross-implementation check: graspd's negentropy core (through its
// line harness, tests/messages/negentropy_harness.cpp) against the JavaScript
// port shipped with nostr-tools. Run by tests/messages/negentropy_interop_test.cpp.
//
//   node negentropy_interop.mjs <harness> [seed] [scale]
//
// For seeded random record sets it runs
//   1. the nostr-tools client against our server, with our client and a JS
//      responder fed the same messages in lockstep: every message of ours must
//      equal the JavaScript one of the same role, byte for byte;
//   2. our client against the JS responder;
// and checks that have/need equal the true set differences and that every
// message respects its side's frame size limit.
//
// nostr-tools implements only the initiator (its reconcile() treats every
// IdList like a client). The responder below is built from nostr-tools'
// primitives (storage, bound codec, splitRange, fingerprints, frame limit
// test) plus the two responder rules the port lacks, written from the spec
// (docs/spec/nip77-negentropy.md §5.2, §5.3d, §6.1): the own-IdList answer
// with its frame-limit truncation and the bare `61` answer to other versions.
// The port only handles timestamps below 2^31, so the sets stay there.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { nip77 } from 'nostr-tools';
import { jsStorage, Responder } from './negentropy_responder.mjs';

const { Negentropy } = nip77;

// "Unlimited" for nostr-tools, which refuses limits below 4096 (0 included).
const NO_LIMIT = 2 ** 40;

// --- seeded randomness ------------------------------------------------------

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomIdHex(rand, sharedPrefix) {
  let hex = '';
  for (let i = 0; i < 32; ++i) {
    const byte = i < sharedPrefix ? 0x42 : Math.floor(rand() * 256);
    hex += byte.toString(16).padStart(2, '0');
  }
  return hex;
}

// Each record lands in both sets, only the client's or only the server's.
function makeSets(rand, { n, weights, timestamps, sharedPrefix = 0 }) {
  const total = weights[0] + weights[1] + weights[2];
  const sets = { client: [], server: [], onlyClient: new Set(), onlyServer: new Set() };
  const used = new Set();
  while (used.size < n) {
    const item = { timestamp: 1700000000 + Math.floor(rand() * timestamps), id: randomIdHex(rand, sharedPrefix) };
    if (used.has(item.id)) continue;
    used.add(item.id);
    const r = rand() * total;
    if (r < weights[0]) {
      sets.client.push(item);
      sets.server.push(item);
    } else if (r < weights[0] + weights[1]) {
      sets.client.push(item);
      sets.onlyClient.add(item.id);
    } else {
      sets.server.push(item);
      sets.onlyServer.add(item.id);
    }
  }
  return sets;
}

// --- our harness as a child process -------------------------------------------

class Harness {
  constructor(path, limit, items) {
    this.proc = spawn(path, [], {
      env: { ...process.env, FRAMESIZELIMIT: String(limit) },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.lines = [];
    this.waiters = [];
    this.closed = false;
    const rl = createInterface({ input: this.proc.stdout, crlfDelay: Infinity });
    rl.on('line', (line) => (this.waiters.length ? this.waiters.shift()(line) : this.lines.push(line)));
    rl.on('close', () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w(null);
    });
    this.send(items.map((it) => `item,${it.timestamp},${it.id}`).join('\n'));
    this.send('seal');
  }

  send(text) {
    if (text.length) this.proc.stdin.write(text + '\n');
  }

  async line() {
    if (this.lines.length) return this.lines.shift();
    if (this.closed) return null;
    const line = await new Promise((resolve) => this.waiters.push(resolve));
    if (line === null) throw new Error('harness exited unexpectedly');
    return line;
  }

  async msg() {
    const line = await this.line();
    if (!line.startsWith('msg,')) throw new Error(`expected msg, got ${line.slice(0, 80)}`);
    return line.slice(4);
  }

  // Client side: have/need lines, then msg,<hex> (returned) or done (null).
  async reconcile(hex) {
    this.send(`msg,${hex}`);
    const have = [];
    const need = [];
    for (;;) {
      const line = await this.line();
      if (line === 'done') return { have, need, next: null };
      if (line.startsWith('msg,')) return { have, need, next: line.slice(4) };
      if (line.startsWith('have,')) have.push(line.slice(5));
      else if (line.startsWith('need,')) need.push(line.slice(5));
      else throw new Error(`unexpected harness output ${line.slice(0, 80)}`);
    }
  }

  async respond(hex) {
    this.send(`msg,${hex}`);
    return this.msg();
  }

  close() {
    this.proc.stdin.end();
  }
}

// --- the JavaScript sides ------------------------------------------------------

// --- checks ----------------------------------------------------------------------

function check(cond, what) {
  if (!cond) throw new Error(what);
}

function checkLimit(hex, limit, what) {
  check(limit === 0 || hex.length / 2 <= limit, `${what}: ${hex.length / 2} bytes above the limit ${limit}`);
}

function sameSet(got, want, what) {
  const missing = [...want].filter((x) => !got.has(x));
  const extra = [...got].filter((x) => !want.has(x));
  check(!missing.length && !extra.length, `${what}: ${missing.length} missing, ${extra.length} extra`);
}

function differ(a, b, what) {
  if (a === b) return;
  let i = 0;
  while (i < a.length && a[i] === b[i]) ++i;
  throw new Error(`${what} differs at byte ${i / 2}: ours ${String(a).slice(i, i + 40)}, js ${String(b).slice(i, i + 40)}`);
}

const jsLimit = (limit) => (limit === 0 ? NO_LIMIT : limit);

// JS client vs our server; our client and the JS responder shadow each step.
async function clientVsOurServer(path, c, sets) {
  const jsClient = new Negentropy(jsStorage(sets.client), c.clientLimit);
  const responder = new Responder(sets.server, jsLimit(c.serverLimit));
  const server = new Harness(path, c.serverLimit, sets.server);
  const client = new Harness(path, c.clientLimit, sets.client);
  const have = new Set();
  const need = new Set();
  let msg = jsClient.initiate();
  client.send('initiate');
  differ(await client.msg(), msg, 'initiate');
  let rounds = 0;
  try {
    for (;;) {
      checkLimit(msg, c.clientLimit, `client message ${rounds}`);
      const reply = await server.respond(msg);
      differ(reply, responder.respond(msg), `server reply ${rounds}`);
      checkLimit(reply, c.serverLimit, `server reply ${rounds}`);
      const jsRound = { have: new Set(), need: new Set() };
      const next = jsClient.reconcile(reply, (id) => jsRound.have.add(id), (id) => jsRound.need.add(id));
      const ours = await client.reconcile(reply);
      differ(ours.next, next, `client message ${rounds + 1}`);
      sameSet(new Set(ours.have), jsRound.have, `have of round ${rounds}`);
      sameSet(new Set(ours.need), jsRound.need, `need of round ${rounds}`);
      jsRound.have.forEach((id) => have.add(id));
      jsRound.need.forEach((id) => need.add(id));
      ++rounds;
      if (next === null) break;
      check(rounds < 500, 'no termination');
      msg = next;
    }
  } finally {
    server.close();
    client.close();
  }
  sameSet(have, sets.onlyClient, 'have (nostr-tools client)');
  sameSet(need, sets.onlyServer, 'need (nostr-tools client)');
  return rounds;
}

async function ourClientVsJsServer(path, c, sets) {
  const responder = new Responder(sets.server, jsLimit(c.serverLimit));
  const client = new Harness(path, c.clientLimit, sets.client);
  const have = new Set();
  const need = new Set();
  client.send('initiate');
  let msg = await client.msg();
  try {
    for (let rounds = 0; msg !== null; ++rounds) {
      check(rounds < 500, 'no termination');
      checkLimit(msg, c.clientLimit, `client message ${rounds}`);
      const reply = responder.respond(msg);
      checkLimit(reply, c.serverLimit, `server reply ${rounds}`);
      const ours = await client.reconcile(reply);
      ours.have.forEach((id) => have.add(id));
      ours.need.forEach((id) => need.add(id));
      msg = ours.next;
    }
  } finally {
    client.close();
  }
  sameSet(have, sets.onlyClient, 'have (graspd client)');
  sameSet(need, sets.onlyServer, 'need (graspd client)');
}

// Version negotiation (spec §5.2): a server answers 0x62 with just 61.
async function protocolVersion(path) {
  const server = new Harness(path, 0, [{ timestamp: 12345, id: 'ee'.repeat(32) }]);
  try {
    check((await server.respond('62aabbccddeeff')) === '61', 'server answer to version 0x62');
    check((await server.respond('6100000200')) === '6100000201' + 'ee'.repeat(32), 'server IdList answer');
  } finally {
    server.close();
  }
  const responder = new Responder([{ timestamp: 12345, id: 'ee'.repeat(32) }], NO_LIMIT);
  check(responder.respond('62aabbccddeeff') === '61', 'JS responder answer to version 0x62');
}

const CASES = [
  { name: 'empty/empty', n: 0, weights: [1, 1, 1], timestamps: 1, clientLimit: 60000, serverLimit: 500000 },
  { name: 'equal', n: 3000, weights: [1, 0, 0], timestamps: 1000, clientLimit: 60000, serverLimit: 500000 },
  { name: 'disjoint', n: 3000, weights: [0, 1, 1], timestamps: 2000, clientLimit: 60000, serverLimit: 0 },
  { name: 'client empty', n: 5000, weights: [0, 0, 1], timestamps: 500, clientLimit: 4096, serverLimit: 4096 },
  { name: 'server empty', n: 5000, weights: [0, 1, 0], timestamps: 500, clientLimit: 4096, serverLimit: 4096 },
  { name: 'few differences', n: 20000, weights: [98, 1, 1], timestamps: 10000, clientLimit: 60000, serverLimit: 500000 },
  { name: 'few differences, small frames', n: 20000, weights: [98, 1, 1], timestamps: 10000, clientLimit: 4096, serverLimit: 4096 },
  { name: 'one timestamp', n: 4000, weights: [80, 10, 10], timestamps: 1, clientLimit: 60000, serverLimit: 500000 },
  { name: 'one timestamp, shared id prefixes', n: 3000, weights: [50, 25, 25], timestamps: 1, sharedPrefix: 29, clientLimit: 4096, serverLimit: 4096 },
  { name: 'clustered, shared id prefixes', n: 6000, weights: [80, 10, 10], timestamps: 3, sharedPrefix: 30, clientLimit: 60000, serverLimit: 0 },
  { name: 'large one-sided, strfry limits', n: 20000, weights: [1, 0, 2], timestamps: 2000, clientLimit: 60000, serverLimit: 500000 },
];

async function main() {
  const [path, seedArg, scaleArg] = process.argv.slice(2);
  if (!path) throw new Error('usage: node negentropy_interop.mjs <harness> [seed] [scale]');
  const seed = Number(seedArg ?? 1);
  // scale < 1 shrinks every set (a sanitizer-built harness is ~10x slower); the cases keep their
  // shapes: the large ones still take several rounds at their frame limits.
  const scale = Number(scaleArg ?? 1);
  await protocolVersion(path);
  const extra = [];
  const rand = mulberry32(seed);
  for (let i = 0; i < 8; ++i) {
    extra.push({
      name: `random ${i}`,
      n: Math.floor(rand() * 3000),
      weights: [Math.floor(rand() * 100), Math.floor(rand() * 10), 1 + Math.floor(rand() * 10)],
      timestamps: 1 + Math.floor(rand() * 2000),
      sharedPrefix: rand() < 0.3 ? 28 : 0,
      clientLimit: rand() < 0.5 ? 4096 : 60000,
      serverLimit: [0, 4096, 500000][Math.floor(rand() * 3)],
    });
  }
  let count = 0;
  for (const c of [...CASES, ...extra]) {
    const sets = makeSets(mulberry32(seed * 1000 + count), { ...c, n: Math.floor(c.n * scale) });
    try {
      const rounds = await clientVsOurServer(path, c, sets);
      await ourClientVsJsServer(path, c, sets);
      console.log(`ok ${c.name}: ${sets.client.length}/${sets.server.length} records, ${rounds} rounds`);
    } catch (e) {
      throw new Error(`case "${c.name}": ${e.message}`);
    }
    ++count;
  }
  console.log(`negentropy interop: ${count} cases passed`);
}

main().catch((e) => {
  console.error(`FAIL ${e.message}`);
  process.exit(1);
});
