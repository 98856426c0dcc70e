// nostr-tools against a running graspd with the GRASP-01 acceptance policy
// (used by tests/integration/policy_e2e_test.cpp).
// Usage: node policy_client.mjs ws://127.0.0.1:PORT
// Prints "ok <check>" / "fail <check>: <why>" and exits 0 only if all passed.
import WebSocket from 'ws';
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay';
import { generateSecretKey, getPublicKey, finalizeEvent } from 'nostr-tools/pure';
import { check, withTimeout, collect, finish } from './harness.mjs';

useWebSocketImplementation(WebSocket);

const url = process.argv[2];
const host = url.replace(/^ws:\/\//, '');
/** Publishes and returns [accepted, message]. */
async function publish(relay, event) {
  try { return [true, await withTimeout(relay.publish(event), 5000, 'publish')]; }
  catch (e) { return [false, e.message]; }
}
async function eventually(fn, what) {
  for (let i = 0; i < 50; i++) { if (await fn()) return true; await new Promise((r) => setTimeout(r, 100)); }
  return false;
}

const owner = generateSecretKey(), maintainer = generateSecretKey(), stranger = generateSecretKey();
const author = generateSecretKey(), commenter = generateSecretKey();
const pk = (sk) => getPublicKey(sk);
const now = Math.floor(Date.now() / 1000);
const sign = (sk, kind, tags, content = '', at = now) => finalizeEvent({ kind, created_at: at, tags, content }, sk);
const listing = (d) => [['d', d], ['clone', `http://${host}/${pk(owner)}/${d}.git`], ['relays', url]];

try {
  const relay = await withTimeout(Relay.connect(url), 5000, 'connect');

  const repo = sign(owner, 30617, listing('demo'), 'a demo repository', now - 100);
  let [ok, msg] = await publish(relay, repo);
  check('announcement listing this relay is accepted', ok, msg);
  const address = `30617:${pk(owner)}:demo`;

  [ok, msg] = await publish(relay, sign(stranger, 30617, [['d', 'x'], ['clone', `http://evil.net/${host}/x.git`], ['relays', `ws://${host.replace(':', '.evil.net:')}`]]));
  check('look-alike host is refused with blocked:', !ok && msg.startsWith('blocked:'), msg);

  [ok, msg] = await publish(relay, sign(stranger, 1, [], 'unrelated note'));
  check('orphan note is refused with blocked:', !ok && msg.startsWith('blocked:'), msg);

  const issue = sign(author, 1621, [['a', address], ['subject', 'bug']], 'it breaks');
  [ok, msg] = await publish(relay, issue);
  check('issue tagging the repository is accepted', ok, msg);
  const comment = sign(commenter, 1111, [['E', issue.id], ['e', issue.id], ['K', '1621']], 'me too');
  [ok, msg] = await publish(relay, comment);
  check('comment on the issue is accepted', ok, msg);
  const reply = sign(stranger, 1, [['e', comment.id]], 'reply to a reply');
  [ok, msg] = await publish(relay, reply);
  check('reply to a reply is accepted', ok, msg);

  [ok, msg] = await publish(relay, sign(owner, 30618, [['d', 'demo'], ['refs/heads/main', 'a'.repeat(40)]]));
  check('state from the owner is accepted', ok, msg);
  [ok, msg] = await publish(relay, sign(stranger, 30618, [['d', 'demo'], ['refs/heads/main', 'b'.repeat(40)]]));
  check('state from a stranger is refused with restricted:', !ok && msg.startsWith('restricted:'), msg);

  [ok, msg] = await publish(relay, sign(generateSecretKey(), 0, [], '{"name":"nobody"}'));
  check('profile of a stranger is refused', !ok && msg.startsWith('blocked:'), msg);
  [ok, msg] = await publish(relay, sign(commenter, 0, [], '{"name":"commenter"}'));
  check('profile of a thread participant is accepted', ok, msg);

  [ok, msg] = await publish(relay, sign(stranger, 5, [['e', issue.id]]));
  check('deletion by a stranger is refused', !ok && msg.startsWith('blocked:'), msg);
  const doomed = sign(author, 1111, [['E', issue.id]], 'to be deleted');
  await publish(relay, doomed);
  [ok, msg] = await publish(relay, sign(author, 5, [['e', doomed.id]]));
  check('deletion by the author is accepted', ok, msg);
  const gone = await collect(relay, [{ ids: [doomed.id] }]);
  check('deleted event is no longer served', gone.length === 0, JSON.stringify(gone));

  // Retry cache: the maintainer's announcement arrives before the owner lists them.
  const early = sign(maintainer, 30617, [['d', 'demo'], ['clone', 'https://elsewhere.net/demo.git'], ['relays', 'wss://elsewhere.net']]);
  [ok, msg] = await publish(relay, early);
  check('maintainer announcement before the owner lists them is refused', !ok && msg.startsWith('blocked:'), msg);
  [ok, msg] = await publish(relay, sign(owner, 30617, [...listing('demo'), ['maintainers', pk(maintainer)]], 'v2', now - 50));
  check('owner announcement listing the maintainer is accepted', ok, msg);
  const released = await eventually(async () => (await collect(relay, [{ ids: [early.id] }])).length === 1);
  check('parked maintainer announcement is stored once its dependency arrives', released);

  relay.close();
} catch (e) {
  check('exception', false, e.message);
}
finish();
