// A scriptable, fault-injecting Nostr relay for graspd's sync tests.
// It stores what it is sent (no signature checks: tests seed it), answers
// REQ with at most `cap` events per filter (newest first), keeps
// subscriptions live, and misbehaves on request. Control messages on any
// connection:
//   ["CONTROL", {cap, drop_after_events, refuse_for_ms, rate_limit_reqs,
//                garbage_frames, raw_events, max_message_length, bomb_bytes,
//                negentropy, negentropy_notice, hold_authors, release}]  -> ["CONTROL","ok"]
//   ["STATS"]  -> ["STATS", {connections, compressed_connections, open_subscriptions,
//                            max_open_subscriptions, reqs, closes, events, neg_opens, neg_msgs,
//                            id_reqs, events_sent, held, bombs}]
// It agrees to permessage-deflate when the client offers it, as public relays do. With
// `bomb_bytes` the next REQ is answered first by one NOTICE of that many bytes of one letter: a
// few hundred KiB once compressed, a decompression bomb for a client that inflates it whole.
// With `hold_authors` (hex pubkeys) a REQ whose filters name one of those authors gets no answer
// (stored events, EOSE) until a CONTROL message with `release: true`: a test decides when the peer
// answers a lookup of those authors, and only that one.
// With `negentropy` it lists NIP 77 and answers NEG-OPEN/NEG-MSG with the
// nostr-tools port (negentropy_responder.mjs); with `negentropy_notice` it
// lists 77 but answers NEG-OPEN with strfry's "negentropy disabled" NOTICE.
// Without either it lists NIPs 1 and 11 and ignores NEG-* frames.
// Prints "listening <port>" on stdout once ready. Usage: node fault_peer.mjs [port] [host]
import http from 'node:http';
import { WebSocketServer } from 'ws';
import { matches, answer } from './nostr_filter.mjs';
import { Responder } from './negentropy_responder.mjs';

const settings = {
  cap: 500,
  drop_after_events: 0,   // close each connection after sending this many events (0 = never)
  refuse_for_ms: 0,       // refuse new connections for this long (from the CONTROL message)
  rate_limit_reqs: 0,     // answer the next N REQs with CLOSED rate-limited:
  garbage_frames: 0,      // send this many garbage frames before each REQ's answer
  raw_events: [],         // raw event JSON sent with every REQ answer (invalid sigs, oversized)
  max_message_length: 0,  // advertised in NIP-11 when > 0
  negentropy: false,      // answer NIP-77
  negentropy_notice: false,  // list 77, then refuse NEG-OPEN with a NOTICE
  hold_authors: [],       // REQs naming one of these authors wait for CONTROL {release: true}
  bomb_bytes: 0,          // the next REQ first gets a NOTICE this long (sent compressed), once
};
const held = [];          // answers of held REQs, run on release
let refuseUntil = 0;
const events = [];
const stats = { connections: 0, open_subscriptions: 0, max_open_subscriptions: 0, reqs: 0,
                closes: 0, events: 0, dials: 0, neg_opens: 0, neg_msgs: 0, id_reqs: 0,
                events_sent: 0, held: 0, compressed_connections: 0, bombs: 0 };

const server = http.createServer((req, res) => {
  stats.dials += 1;
  const speaks77 = settings.negentropy || settings.negentropy_notice;
  const info = { name: 'fault-peer', supported_nips: speaks77 ? [1, 11, 77] : [1, 11] };
  if (settings.max_message_length > 0) info.limitation = { max_message_length: settings.max_message_length };
  res.writeHead(200, { 'content-type': 'application/nostr+json' });
  res.end(JSON.stringify(info));
});
const wss = new WebSocketServer({ noServer: true, maxPayload: 4 * 1024 * 1024, perMessageDeflate: true });
const sockets = new Set();

server.on('upgrade', (req, socket, head) => {
  if (Date.now() < refuseUntil) { socket.destroy(); return; }
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws));
});

wss.on('connection', (ws) => {
  stats.connections += 1;
  if (ws.extensions.includes('permessage-deflate')) stats.compressed_connections += 1;
  sockets.add(ws);
  const subs = new Map();
  let sent = 0;
  const send = (frame) => { if (ws.readyState === 1) ws.send(JSON.stringify(frame)); };
  const sendEvent = (subId, ev) => {
    if (typeof ev === 'string') { if (ws.readyState === 1) ws.send(`["EVENT",${JSON.stringify(subId)},${ev}]`); }
    else send(['EVENT', subId, ev]);
    sent += 1;
    stats.events_sent += 1;
    if (settings.drop_after_events > 0 && sent >= settings.drop_after_events) {
      settings.drop_after_events = 0;  // one-shot
      ws.terminate();
    }
  };
  const closeSub = (id) => { if (subs.delete(id)) stats.open_subscriptions -= 1; };
  const negSessions = new Map();
  const negAnswer = (id, responder, hex) => {
    try {
      send(['NEG-MSG', id, responder.respond(hex)]);
    } catch (e) {
      negSessions.delete(id);
      send(['NEG-ERR', id, `invalid: ${e.message}`]);
    }
  };
  ws.on('close', () => {
    stats.open_subscriptions -= subs.size;
    subs.clear();
    sockets.delete(ws);
  });
  ws.on('message', (data) => {
    let msg;
    try { msg = JSON.parse(data.toString()); } catch { send(['NOTICE', 'invalid: bad json']); return; }
    const verb = msg[0];
    if (verb === 'CONTROL') {
      Object.assign(settings, msg[1]);
      if (msg[1].refuse_for_ms) refuseUntil = Date.now() + msg[1].refuse_for_ms;
      if (msg[1].drop_all) for (const s of sockets) if (s !== ws) s.terminate();
      if (msg[1].release) for (const run of held.splice(0)) run();
      stats.held = held.length;
      send(['CONTROL', 'ok']);
    } else if (verb === 'STATS') {
      send(['STATS', stats]);
    } else if (verb === 'EVENT') {
      const ev = msg[1];
      if (!events.some((e) => e.id === ev.id)) {
        events.push(ev);
        stats.events = events.length;
        for (const s of sockets) s.emit('live', ev);
      }
      send(['OK', ev.id, true, '']);
    } else if (verb === 'REQ') {
      stats.reqs += 1;
      const [, id, ...filters] = msg;
      if (filters.some((f) => f.ids)) stats.id_reqs += 1;
      if (settings.rate_limit_reqs > 0) {
        settings.rate_limit_reqs -= 1;
        send(['CLOSED', id, 'rate-limited: slow down']);
        return;
      }
      if (!subs.has(id)) stats.open_subscriptions += 1;
      subs.set(id, filters);
      stats.max_open_subscriptions = Math.max(stats.max_open_subscriptions, stats.open_subscriptions);
      if (settings.bomb_bytes > 0) {
        stats.bombs += 1;
        ws.send(`["NOTICE","${'a'.repeat(settings.bomb_bytes - 14)}"]`);
        settings.bomb_bytes = 0;
      }
      for (let i = 0; i < settings.garbage_frames; i += 1) {
        if (ws.readyState === 1) ws.send(i % 2 ? '["EVENT","' + id + '",{"id":1}]' : 'not json at all {{{');
      }
      const respond = () => {
        if (!subs.has(id)) return;  // closed while held
        for (const raw of settings.raw_events) sendEvent(id, raw);
        for (const ev of answer(events, filters, settings.cap)) sendEvent(id, ev);
        send(['EOSE', id]);
      };
      const holds = filters.some((f) => (f.authors ?? []).some((a) => settings.hold_authors.includes(a)));
      if (holds) { held.push(respond); stats.held = held.length; } else respond();
    } else if (verb === 'NEG-OPEN') {
      if (settings.negentropy_notice) { send(['NOTICE', 'ERROR: bad msg: negentropy disabled']); return; }
      if (!settings.negentropy) return;
      stats.neg_opens += 1;
      const [, id, filter, hex] = msg;
      const items = events.filter((ev) => matches(filter, ev))
        .map((ev) => ({ timestamp: ev.created_at, id: ev.id }));
      const responder = new Responder(items, 500000);
      negSessions.set(id, responder);
      negAnswer(id, responder, hex);
    } else if (verb === 'NEG-MSG') {
      if (!settings.negentropy) return;
      stats.neg_msgs += 1;
      const responder = negSessions.get(msg[1]);
      if (!responder) send(['NEG-ERR', msg[1], 'closed: unknown subscription handle']);
      else negAnswer(msg[1], responder, msg[2]);
    } else if (verb === 'NEG-CLOSE') {
      negSessions.delete(msg[1]);
    } else if (verb === 'CLOSE') {
      stats.closes += 1;
      closeSub(msg[1]);
    }
  });
  ws.on('live', (ev) => {
    for (const [id, filters] of subs) if (filters.some((f) => matches(f, ev))) sendEvent(id, ev);
  });
});

server.listen(Number(process.argv[2] ?? 0), process.argv[3] ?? '127.0.0.1', () => {
  console.log(`listening ${server.address().port}`);
});
