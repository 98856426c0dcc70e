// NIP-77 byte identity (docs/spec/nip77-negentropy.md §10.8): the same client messages, from
// nostr-tools' reference initiator (frame limit 60,000), go to two relays holding the same events;
// every NEG-MSG payload they answer must be identical. The client goes on with relay A's answer.
//
//   node negentropy_replay.mjs ws://A ws://B '<filter JSON>' <client items file: "ts,idhex" lines>
//
// Prints one JSON line {rounds, have, need, bytes}; exits 1 at the first difference.
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { nip77 } from 'nostr-tools';

const { Negentropy, NegentropyStorageVector } = nip77;
const [urlA, urlB, filterJson, itemsFile] = process.argv.slice(2);
const filter = JSON.parse(filterJson);

const storage = new NegentropyStorageVector();
for (const line of readFileSync(itemsFile, 'utf8').split('\n')) {
  if (!line) continue;
  const [ts, id] = line.split(',');
  storage.insert(Number(ts), id);
}
storage.seal();

function connect(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { maxPayload: 64 * 1024 * 1024 });
    const waiting = [];
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      if (msg[0] === 'NEG-MSG' || msg[0] === 'NEG-ERR') waiting.shift()?.(msg);
    });
    ws.on('open', () => resolve({ ws, next: () => new Promise((r) => waiting.push(r)) }));
    ws.on('error', reject);
  });
}

function fail(text) {
  console.error(text);
  process.exit(1);
}

const timer = setTimeout(() => fail('timeout'), 120000);
const [a, b] = await Promise.all([connect(urlA), connect(urlB)]);
const neg = new Negentropy(storage, 60000);
let message = neg.initiate();
let rounds = 0, bytes = 0;
const have = new Set(), need = new Set();
let open = ['NEG-OPEN', 'replay', filter, message];
while (message) {
  const frame = JSON.stringify(rounds === 0 ? open : ['NEG-MSG', 'replay', message]);
  a.ws.send(frame);
  b.ws.send(frame);
  const [fromA, fromB] = await Promise.all([a.next(), b.next()]);
  if (fromA[0] !== 'NEG-MSG' || fromB[0] !== 'NEG-MSG')
    fail(`round ${rounds}: ${JSON.stringify(fromA).slice(0, 200)} / ${JSON.stringify(fromB).slice(0, 200)}`);
  if (fromA[2] !== fromB[2]) {
    let i = 0;
    while (fromA[2][i] === fromB[2][i]) ++i;
    fail(`round ${rounds}: answers differ at hex offset ${i} (lengths ${fromA[2].length}, ${fromB[2].length})`);
  }
  ++rounds;
  bytes += fromA[2].length / 2;
  message = neg.reconcile(fromA[2], (id) => have.add(id), (id) => need.add(id));
}
clearTimeout(timer);
console.log(JSON.stringify({ rounds, have: have.size, need: need.size, bytes }));
a.ws.close();
b.ws.close();
