// A NIP-77 responder (server side) built on the negentropy port that
// nostr-tools ships. nostr-tools implements only the initiator (its
// reconcile() treats every IdList like a client); the responder below uses its
// primitives (storage, bound codec, splitRange, fingerprints, frame limit test)
// plus the two responder rules the port lacks, written from the spec
// (docs/spec/nip77-negentropy.md §5.2, §5.3d, §6.1): the own-IdList answer
// with its frame-limit truncation and the bare `61` answer to other versions.
// Used by negentropy_interop.mjs (cross-checks) and fault_peer.mjs (a NIP-77 peer).
import { nip77 } from 'nostr-tools';

const { Negentropy, NegentropyStorageVector } = nip77;

export function jsStorage(items) {
  const storage = new NegentropyStorageVector();
  for (const it of items) storage.insert(it.timestamp, it.id);
  storage.seal();
  return storage;
}

function varint(n) {
  const groups = [n % 128];
  for (n = Math.floor(n / 128); n > 0; n = Math.floor(n / 128)) groups.unshift((n % 128) | 0x80);
  return Uint8Array.from(groups);
}

function take(buf, n) {
  if (buf.length < n) throw new Error('parse ends prematurely');
  return buf.shiftN(n);
}

function readVarint(buf) {
  let value = 0;
  for (;;) {
    const byte = take(buf, 1)[0];
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) return value;
  }
}

function sameBytes(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class Responder {
  constructor(items, limit) {
    this.neg = new Negentropy(jsStorage(items), limit);
    // nostr-tools does not export its buffer class; take it from an instance.
    this.Wrapped = this.neg.encodeBound(this.neg._bound(0)).constructor;
  }

  respond(hex) {
    const neg = this.neg;
    const query = new this.Wrapped(Uint8Array.from(Buffer.from(hex, 'hex')));
    neg.lastTimestampIn = neg.lastTimestampOut = 0;
    const out = new this.Wrapped();
    out.extend(Uint8Array.of(0x61));
    const version = take(query, 1)[0];
    if (version < 0x60 || version > 0x6f) throw new Error('invalid negentropy protocol version byte');
    if (version !== 0x61) return Buffer.from(out.unwrap()).toString('hex');
    const state = { prevBound: neg._bound(0), prevIndex: 0, skip: false };
    while (query.length !== 0) if (this.range(query, out, state)) break;
    return Buffer.from(out.unwrap()).toString('hex');
  }

  // One incoming range; true once the frame size limit ended the reply.
  range(query, out, state) {
    const neg = this.neg;
    const size = neg.storage.size();
    let o = new this.Wrapped();
    const flushSkip = () => {
      if (!state.skip) return;
      state.skip = false;
      o.extend(neg.encodeBound(state.prevBound));
      o.extend(varint(0));
    };
    const bound = neg.decodeBound(query);
    const mode = readVarint(query);
    const lower = state.prevIndex;
    let upper = neg.storage.findLowerBound(lower, size, bound);
    if (mode === 0) {
      state.skip = true;
    } else if (mode === 1) {
      const theirs = take(query, 16);
      if (sameBytes(theirs, neg.storage.fingerprint(lower, upper))) state.skip = true;
      else {
        flushSkip();
        neg.splitRange(lower, upper, bound, o);
      }
    } else if (mode === 2) {
      take(query, 32 * readVarint(query));
      flushSkip();
      upper = this.ownIds(o, out, lower, upper, bound);
      out.extend(o);
      o = new this.Wrapped();
    } else {
      throw new Error('unexpected mode');
    }
    if (neg.exceededFrameSizeLimit(out.length + o.length)) {
      out.extend(neg.encodeBound(neg._bound(Number.MAX_VALUE)));
      out.extend(varint(1));
      out.extend(neg.storage.fingerprint(upper, size));
      return true;
    }
    out.extend(o);
    state.prevIndex = upper;
    state.prevBound = bound;
    return false;
  }

  // The responder's own ids of [lower, upper), cut at a full-record bound
  // when output so far + ids so far passes the limit; returns the new upper.
  ownIds(o, out, lower, upper, bound) {
    const neg = this.neg;
    const ids = [];
    let endBound = bound;
    neg.storage.iterate(lower, upper, (item, index) => {
      if (neg.exceededFrameSizeLimit(out.length + 32 * ids.length)) {
        endBound = { timestamp: item.timestamp, id: item.id };
        upper = index;
        return false;
      }
      ids.push(item.id);
      return true;
    });
    o.extend(neg.encodeBound(endBound));
    o.extend(varint(2));
    o.extend(varint(ids.length));
    for (const id of ids) o.extend(id);
    return upper;
  }
}
