// Many plain NIP-01 relays on one loopback port, one per URL path (`ws://127.0.0.1:P/r17`), each
// with its own in-memory store, for benchmarks that need hundreds of relay URLs without hundreds of
// processes. The kit seeds them directly (no signature checks, no WebSocket); graspd sees ordinary
// relays: NIP-11 on GET, REQ answered from the store then EOSE, live subscriptions, CLOSE, COUNT.
// No NIP-77 (NEG-* frames are ignored, as a relay without it would). Counts per path the REQs it
// was sent, and across all paths the open connections (now and at peak).
import http from 'node:http';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'tests/interop/package.json'));
const { WebSocketServer } = require('ws');
const { matches, answer } = await import(join(root, 'tests/interop/nostr_filter.mjs'));

class PathRelay {
  constructor() { this.events = []; this.ids = new Set(); this.reqs = 0; this.sockets = new Set(); }
  add(ev) {
    if (this.ids.has(ev.id)) return;
    this.ids.add(ev.id);
    this.events.push(ev);
    for (const s of this.sockets) s.emit('live', ev);
  }
}

export class MultiRelay {
  constructor() {
    this.relays = new Map();
    this.open = 0;
    this.peak = 0;
  }

  /** The relay at `path`, created empty on first use. */
  at(path) {
    if (!this.relays.has(path)) this.relays.set(path, new PathRelay());
    return this.relays.get(path);
  }
  url(path) { return `ws://127.0.0.1:${this.port}${path}`; }
  reqsAt(path) { return this.relays.get(path)?.reqs ?? 0; }

  /** Listens on `port` (0 = any free one). */
  listen(port = 0) {
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/nostr+json' });
      res.end(JSON.stringify({ name: `kit relay ${req.url}`, supported_nips: [1, 11, 45] }));
    });
    const wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });
    server.on('upgrade', (req, socket, head) => {
      const relay = this.at(new URL(req.url, 'http://x').pathname);
      wss.handleUpgrade(req, socket, head, (ws) => this.serve(ws, relay));
    });
    this.server = server;
    return new Promise((resolve) => server.listen(port, '127.0.0.1', () => {
      this.port = server.address().port;
      resolve(this);
    }));
  }

  close() { this.server?.close(); }

  serve(ws, relay) {
    this.open += 1;
    this.peak = Math.max(this.peak, this.open);
    relay.sockets.add(ws);
    const subs = new Map();
    const send = (frame) => { if (ws.readyState === 1) ws.send(JSON.stringify(frame)); };
    ws.on('close', () => { this.open -= 1; relay.sockets.delete(ws); });
    ws.on('live', (ev) => {
      for (const [id, filters] of subs) if (filters.some((f) => matches(f, ev))) send(['EVENT', id, ev]);
    });
    ws.on('message', (data) => {
      let msg;
      try { msg = JSON.parse(data.toString()); } catch { send(['NOTICE', 'invalid: bad json']); return; }
      const [verb, id, ...rest] = msg;
      if (verb === 'REQ') {
        relay.reqs += 1;
        subs.set(id, rest);
        for (const ev of answer(relay.events, rest)) send(['EVENT', id, ev]);
        send(['EOSE', id]);
      } else if (verb === 'COUNT') {
        send(['COUNT', id, { count: answer(relay.events, rest).length }]);
      } else if (verb === 'CLOSE') {
        subs.delete(id);
      } else if (verb === 'EVENT') {
        relay.add(id);
        send(['OK', id.id, true, '']);
      }
    });
  }
}
