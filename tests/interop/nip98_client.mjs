// A NIP-86 management call authorised with nostr-tools' NIP-98 token (nip98.getToken), the way an
// operator's tool makes one (used by tests/integration/admin_test.cpp).
// Usage: node nip98_client.mjs <http url to POST to> <u url of the token> <secret key hex> <method>
//        [params JSON array]
// Prints "<status> <body>" and exits 0 when an HTTP answer came.
import { getToken } from 'nostr-tools/nip98';
import { finalizeEvent } from 'nostr-tools/pure';

const [target, u, secretHex, method, paramsJson = '[]'] = process.argv.slice(2);
const secret = Uint8Array.from(Buffer.from(secretHex, 'hex'));
const request = { method, params: JSON.parse(paramsJson) };
// getToken hashes JSON.stringify(payload): the body sent must be exactly that text.
const body = JSON.stringify(request);
const authorization = await getToken(u, 'POST', (event) => finalizeEvent(event, secret), true, request);
const response = await fetch(target, {
  method: 'POST',
  headers: { 'Content-Type': 'application/nostr+json+rpc', Authorization: authorization },
  body,
});
console.log(`${response.status} ${await response.text()}`);
