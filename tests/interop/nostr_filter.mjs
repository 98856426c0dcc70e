// NIP-01 filter semantics for the test peers (fault_peer.mjs, tls_peer.mjs).

/** True when `ev` matches filter `f` (ids, authors, kinds, since/until inclusive, #x tags). */
export function matches(f, ev) {
  if (f.ids && !f.ids.includes(ev.id)) return false;
  if (f.authors && !f.authors.includes(ev.pubkey)) return false;
  if (f.kinds && !f.kinds.includes(ev.kind)) return false;
  if (f.since !== undefined && ev.created_at < f.since) return false;
  if (f.until !== undefined && ev.created_at > f.until) return false;
  for (const key of Object.keys(f)) {
    if (key[0] !== '#' || key.length !== 2) continue;
    const wanted = f[key];
    if (!ev.tags.some((t) => t[0] === key[1] && wanted.includes(t[1]))) return false;
  }
  return true;
}

/** The stored answer to a REQ: per filter the newest `min(limit, cap)` matches (ties: lowest id), deduplicated. */
export function answer(events, filters, cap = Infinity) {
  const out = new Map();
  for (const f of filters) {
    const limit = Math.min(f.limit ?? Infinity, cap);
    const found = events.filter((ev) => matches(f, ev))
      .sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? -1 : 1))
      .slice(0, limit);
    for (const ev of found) out.set(ev.id, ev);
  }
  return [...out.values()];
}
