// Pipelined publishing against a running graspd with the GRASP-01 acceptance policy: a client
// writes a whole dependency chain on one WebSocket without waiting for each OK, and the policy must
// judge every event against the store plus the events it accepted whose commit is still in flight.
// Raw `ws` frames (not Relay.publish) so that every EVENT frame is written back to back before any
// OK is read.
// Usage: node pipelined_client.mjs ws://127.0.0.1:PORT
// Prints "ok <check>" / "fail <check>: <why>" and exits 0 only if all passed.
import WebSocket from 'ws';
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure';
import { check, withTimeout, finish } from './harness.mjs';

const url = process.argv[2];
const host = url.replace(/^ws:\/\//, '');
const DEADLINE_MS = 20000;

const pk = (sk) => getPublicKey(sk);
const now = Math.floor(Date.now() / 1000);
let clock = now - 2000;
/** Every event gets its own created_at (now-2000, now-1999, ...) so replaceable kinds behave. */
const sign = (sk, kind, tags, content = '') => finalizeEvent({ kind, created_at: clock++, tags, content }, sk);
const listing = (owner, d) => [['d', d], ['clone', `http://${host}/${pk(owner)}/${d}.git`], ['relays', url]];
const short = (id) => id.slice(0, 12);

/** One raw WebSocket: pipelined EVENTs, OKs in arrival order, REQ and COUNT round trips. */
class Conn {
  static async open() {
    const ws = new WebSocket(url);
    await withTimeout(new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    }), 5000, 'connect');
    return new Conn(ws);
  }

  constructor(ws) {
    this.ws = ws;
    this.oks = [];          // [id, accepted, message] in arrival order
    this.notices = [];
    this.okWaiters = [];    // {count, resolve}
    this.subs = new Map();  // subid -> handler(message)
    this.closed = null;
    ws.on('message', (data) => this.dispatch(JSON.parse(data.toString())));
    ws.on('close', (code, reason) => {
      this.closed = `socket closed ${code} ${reason}`;
      for (const w of this.okWaiters) w.reject(new Error(this.closed));
      this.okWaiters = [];
      for (const handler of this.subs.values()) handler(['CLOSED', null, this.closed]);
    });
  }

  dispatch(msg) {
    const [type] = msg;
    if (type === 'OK') {
      this.oks.push([msg[1], msg[2], msg[3]]);
      this.okWaiters = this.okWaiters.filter((w) => {
        if (this.oks.length < w.count) return true;
        w.resolve();
        return false;
      });
    } else if (type === 'NOTICE') {
      this.notices.push(msg[1]);
    } else if ((type === 'EVENT' || type === 'EOSE' || type === 'CLOSED' || type === 'COUNT') && this.subs.has(msg[1])) {
      this.subs.get(msg[1])(msg);
    }
  }

  /** Writes every EVENT frame in one synchronous loop, then resolves with their OKs (in arrival order)
   *  as soon as one OK per event has arrived. */
  async publishPipelined(events, ms = DEADLINE_MS) {
    const start = this.oks.length;
    for (const ev of events) this.ws.send(JSON.stringify(['EVENT', ev]));
    const want = start + events.length;
    if (this.oks.length < want) {
      await withTimeout(new Promise((resolve, reject) => {
        if (this.closed) reject(new Error(this.closed));
        else this.okWaiters.push({ count: want, resolve, reject });
      }), ms, `${events.length} OKs (got ${this.oks.length - start}; notices ${JSON.stringify(this.notices)})`);
    }
    return this.oks.slice(start, want);
  }

  /** Stored events matching the filters, up to EOSE. */
  req(filters, ms = DEADLINE_MS) {
    const subid = `q${Math.random().toString(36).slice(2, 10)}`;
    return withTimeout(new Promise((resolve, reject) => {
      const events = [];
      this.subs.set(subid, (msg) => {
        if (msg[0] === 'EVENT') events.push(msg[2]);
        else if (msg[0] === 'EOSE') {
          this.subs.delete(subid);
          this.ws.send(JSON.stringify(['CLOSE', subid]));
          resolve(events);
        } else if (msg[0] === 'CLOSED') {
          this.subs.delete(subid);
          reject(new Error(`REQ closed: ${msg[2]}`));
        }
      });
      this.ws.send(JSON.stringify(['REQ', subid, ...filters]));
    }), ms, 'REQ');
  }

  /** NIP-45 COUNT: resolves with the count. */
  count(filters, ms = DEADLINE_MS) {
    const subid = `c${Math.random().toString(36).slice(2, 10)}`;
    return withTimeout(new Promise((resolve, reject) => {
      this.subs.set(subid, (msg) => {
        this.subs.delete(subid);
        if (msg[0] === 'COUNT') resolve(msg[2].count);
        else reject(new Error(`COUNT answered ${JSON.stringify(msg)}`));
      });
      this.ws.send(JSON.stringify(['COUNT', subid, ...filters]));
    }), ms, 'COUNT');
  }

  close() { this.ws.close(); }
}

/** Names the events whose OK is not `true`, with the relay's message. */
function refusals(labels, events, oks) {
  const byId = new Map(oks.map(([id, accepted, message]) => [id, [accepted, message]]));
  const bad = [];
  events.forEach((ev, i) => {
    const answer = byId.get(ev.id);
    if (!answer) bad.push(`${labels[i]} (${short(ev.id)}): no OK`);
    else if (answer[0] !== true) bad.push(`${labels[i]} (${short(ev.id)}): OK false ${JSON.stringify(answer[1])}`);
  });
  return bad;
}

/** Where the OK order differs from the send order, or '' when it does not. */
function orderMismatch(events, oks) {
  for (let i = 0; i < events.length; i++) {
    if (!oks[i] || oks[i][0] !== events[i].id) {
      return `OK #${i} is for ${oks[i] ? short(oks[i][0]) : 'nothing'}, expected ${short(events[i].id)}`;
    }
  }
  return '';
}

/** Sends the chain through `conn` pipelined and runs the OK checks under `name`. */
async function pipelinedChecks(name, conn, chain) {
  const labels = chain.map(([label]) => label), events = chain.map(([, ev]) => ev);
  const oks = await conn.publishPipelined(events);
  const bad = refusals(labels, events, oks);
  check(`${name}: every event is OK true`, bad.length === 0, bad.join('; '));
  const mismatch = orderMismatch(events, oks);
  check(`${name}: OKs arrive in the order sent`, mismatch === '', mismatch);
  return events;
}

async function chainOnOneSocket() {
  const name = 'pipelined chain on one socket';
  const owner = generateSecretKey(), maintainer = generateSecretKey(), author = generateSecretKey();
  const commenter = generateSecretKey(), replier = generateSecretKey(), reactor = generateSecretKey();
  const d = 'pipelined-chain';
  const address = `30617:${pk(owner)}:${d}`;

  const repo = sign(owner, 30617, [...listing(owner, d), ['maintainers', pk(maintainer)]], 'pipelined chain');
  const maintainerRepo = sign(maintainer, 30617,
    [['d', d], ['clone', 'https://elsewhere.net/chain.git'], ['relays', 'wss://elsewhere.net']], 'mirror');
  const state = sign(maintainer, 30618, [['d', d], ['refs/heads/main', 'c'.repeat(40)], ['HEAD', 'ref: refs/heads/main']]);
  const issue = sign(author, 1621, [['a', address], ['subject', 'pipelined bug']], 'it breaks when pipelined');
  const comment = sign(commenter, 1111, [['E', issue.id], ['e', issue.id], ['K', '1621']], 'me too');
  const reply = sign(replier, 1111, [['e', comment.id]], 'reply to the comment');
  const status = sign(owner, 1632, [['e', issue.id], ['a', address]], 'closed');
  const reaction = sign(reactor, 7, [['e', comment.id]], '+');
  const profile = sign(commenter, 0, [], '{"name":"commenter"}');
  const deletion = sign(replier, 5, [['e', reply.id]], 'retracted');
  const chain = [
    ['owner announcement', repo], ['maintainer announcement', maintainerRepo], ['state', state],
    ['issue', issue], ['comment', comment], ['reply', reply], ['status', status],
    ['reaction', reaction], ['commenter profile', profile], ['deletion of the reply', deletion],
  ];

  const conn = await Conn.open();
  try {
    const events = await pipelinedChecks(name, conn, chain);
    const kept = events.filter((ev) => ev.id !== reply.id);
    const found = await conn.req([{ ids: kept.map((ev) => ev.id), limit: 100 }]);
    const foundIds = new Set(found.map((ev) => ev.id));
    const missing = chain.filter(([, ev]) => ev.id !== reply.id && !foundIds.has(ev.id)).map(([label]) => label);
    check(`${name}: a REQ right after serves every kept event`, missing.length === 0 && found.length === kept.length,
      `missing ${JSON.stringify(missing)}, got ${found.length} of ${kept.length}`);
    const gone = await conn.req([{ ids: [reply.id] }]);
    check(`${name}: the deleted reply is not served`, gone.length === 0, JSON.stringify(gone));
  } finally {
    conn.close();
  }
}

async function chainOverTwoSockets() {
  const name = 'chain split over two sockets';
  const owner = generateSecretKey(), author = generateSecretKey(), commenter = generateSecretKey();
  const d = 'two-sockets';
  const address = `30617:${pk(owner)}:${d}`;
  const repo = sign(owner, 30617, listing(owner, d), 'two sockets');
  const state = sign(owner, 30618, [['d', d], ['refs/heads/main', 'd'.repeat(40)]]);
  const issue = sign(author, 1621, [['a', address], ['subject', 'split']], 'issue over socket B');
  const comment = sign(commenter, 1111, [['E', issue.id], ['e', issue.id], ['K', '1621']], 'comment over socket B');

  const a = await Conn.open(), b = await Conn.open();
  try {
    const [ok] = await a.publishPipelined([repo]);
    check(`${name}: socket A's announcement is OK true`, ok[0] === repo.id && ok[1] === true, JSON.stringify(ok));
    await pipelinedChecks(`${name} (socket B)`, b,
      [['state', state], ['issue', issue], ['comment', comment]]);
  } finally {
    a.close();
    b.close();
  }
}

async function burst() {
  const name = 'burst of 1000 pipelined events';
  const owner = generateSecretKey();
  const authors = Array.from({ length: 10 }, () => generateSecretKey());
  const d = 'burst';
  const address = `30617:${pk(owner)}:${d}`;
  const repo = sign(owner, 30617, listing(owner, d), 'burst');
  const events = [], issueIds = [];
  for (let i = 0; i < 100; i++) {
    const issue = sign(authors[i % 10], 1621, [['a', address], ['subject', `issue ${i}`]], `issue ${i}`);
    events.push(issue);
    issueIds.push(issue.id);
    for (let j = 0; j < 9; j++) {
      events.push(sign(authors[(i + j + 1) % 10], 1111, [['E', issue.id], ['e', issue.id], ['K', '1621']],
        `comment ${j} on issue ${i}`));
    }
  }

  const conn = await Conn.open();
  try {
    const [ok] = await conn.publishPipelined([repo]);
    check(`${name}: the announcement is OK true first`, ok[0] === repo.id && ok[1] === true, JSON.stringify(ok));
    const oks = await conn.publishPipelined(events);
    const labels = events.map((_, k) => (k % 10 === 0 ? `issue ${k / 10}` : `comment ${k % 10 - 1} on issue ${Math.floor(k / 10)}`));
    const bad = refusals(labels, events, oks);
    check(`${name}: 1000 OKs, all true`, oks.length === 1000 && bad.length === 0,
      `${oks.length} OKs; ${bad.length} refused: ${bad.slice(0, 5).join('; ')}`);
    const mismatch = orderMismatch(events, oks);
    check(`${name}: OK ids arrive in exactly the order sent`, mismatch === '', mismatch);
    const comments = await conn.count([{ kinds: [1111], '#E': issueIds }]);
    check(`${name}: COUNT finds the 900 comments`, comments === 900, `count ${comments}`);
    const issues = await conn.req([{ ids: issueIds, limit: 2000 }]);
    check(`${name}: REQ serves the 100 issues`, issues.length === 100, `got ${issues.length}`);
  } finally {
    conn.close();
  }
}

for (const [name, run] of [['pipelined chain on one socket', chainOnOneSocket],
  ['chain split over two sockets', chainOverTwoSockets], ['burst of 1000 pipelined events', burst]]) {
  try {
    await run();
  } catch (e) {
    check(`${name}: exception`, false, e.message);
  }
}
finish();
