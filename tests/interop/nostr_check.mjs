// Reference computations with nostr-tools for graspd's interop tests
// (tests/messages/interop_test.cpp). One JSON object or string per line.
//
//   node nostr_check.mjs check <events.json>  for each event of the JSON array:
//       {"id": getEventHash(ev), "valid": verifyEvent(ev), "npub": npubEncode(ev.pubkey)}
//   node nostr_check.mjs sign                 events with tricky strings signed by
//       nostr-tools (finalizeEvent), one JSON.stringify'ed event per line
import { readFileSync } from 'node:fs';
import { finalizeEvent, getEventHash, verifyEvent, nip19 } from 'nostr-tools';

function check(path) {
  const events = JSON.parse(readFileSync(path, 'utf8'));
  for (const ev of events) {
    const result = { id: getEventHash(ev), valid: verifyEvent(ev), npub: nip19.npubEncode(ev.pubkey) };
    process.stdout.write(JSON.stringify(result) + '\n');
  }
}

function trickyStrings() {
  const out = [];
  for (let c = 0; c < 128; ++c) out.push(`a${String.fromCharCode(c)}b`);
  let all = '';
  for (let c = 0; c < 128; ++c) all += String.fromCharCode(c);
  out.push(all);
  out.push('é中文😀\u2028\u2029\ufeff\u00a0\u{10ffff}/\\"');
  out.push('');
  return out;
}

function sign() {
  const secret = Uint8Array.from(Buffer.from('7f'.repeat(32), 'hex'));
  let createdAt = 1700000000;
  for (const text of trickyStrings()) {
    const ev = finalizeEvent(
      { kind: 1, created_at: createdAt++, tags: [['t', text], ['x', text, text]], content: text },
      secret,
    );
    process.stdout.write(JSON.stringify(ev) + '\n');
  }
}

const [mode, arg] = process.argv.slice(2);
if (mode === 'check') check(arg);
else if (mode === 'sign') sign();
else {
  process.stderr.write('usage: nostr_check.mjs check <events.json> | sign\n');
  process.exit(2);
}
