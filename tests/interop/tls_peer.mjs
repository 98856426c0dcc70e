// A minimal Nostr relay over TLS (wss://) for graspd's sync transport tests.
// It serves a fixed list of events read at start from a JSON file (an array
// of events; no signature checks: tests sign them), answers REQ with the
// matching events (newest first, honouring `limit`) then EOSE, keeps
// subscriptions open and ignores everything else. It presents its
// certificate only to clients sending SNI "localhost". It counts finished TLS
// handshakes and WebSocket connections, shown by GET /stats on the TLS port
// (the test only needs them for diagnostics, so no plain control channel).
// Prints "listening <port>" on stdout once ready.
// Usage: node tls_peer.mjs <key.pem> <cert.pem> <events.json> [port]
import fs from 'node:fs';
import https from 'node:https';
import tls from 'node:tls';
import { WebSocketServer } from 'ws';
import { answer } from './nostr_filter.mjs';

const [keyPath, certPath, eventsPath, portArg] = process.argv.slice(2);
if (!keyPath || !certPath || !eventsPath) {
  console.error('usage: node tls_peer.mjs <key.pem> <cert.pem> <events.json> [port]');
  process.exit(2);
}
const events = JSON.parse(fs.readFileSync(eventsPath, 'utf8'));
const stats = { tls_handshakes: 0, tls_errors: 0, connections: 0, reqs: 0, last_sni: null };


// The certificate is served only to clients that send SNI "localhost" (no
// default certificate), so a passing test also proves graspd sends SNI.
const context = tls.createSecureContext({ key: fs.readFileSync(keyPath), cert: fs.readFileSync(certPath) });
const server = https.createServer({
  SNICallback: (name, done) => {
    stats.last_sni = name;
    if (name === 'localhost') done(null, context);
    else done(new Error(`unexpected SNI ${name}`));
  },
}, (req, res) => {
  if (req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/nostr+json' });
  res.end(JSON.stringify({ name: 'tls-peer', supported_nips: [1, 11] }));
});
server.on('secureConnection', () => { stats.tls_handshakes += 1; });
server.on('tlsClientError', () => { stats.tls_errors += 1; });

const wss = new WebSocketServer({ server, maxPayload: 4 * 1024 * 1024 });
wss.on('connection', (ws) => {
  stats.connections += 1;
  const send = (frame) => { if (ws.readyState === 1) ws.send(JSON.stringify(frame)); };
  ws.on('message', (data) => {
    let msg;
    try { msg = JSON.parse(data.toString()); } catch { send(['NOTICE', 'invalid: bad json']); return; }
    if (!Array.isArray(msg)) return;
    if (msg[0] === 'REQ') {
      stats.reqs += 1;
      const [, id, ...filters] = msg;
      for (const ev of answer(events, filters)) send(['EVENT', id, ev]);
      send(['EOSE', id]);
    } else if (msg[0] === 'EVENT' && msg[1]) {
      send(['OK', msg[1].id, false, 'blocked: read-only test peer']);
    }
  });
});

server.listen(Number(portArg ?? 0), '127.0.0.1', () => {
  console.log(`listening ${server.address().port}`);
});
