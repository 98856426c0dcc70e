// Shared by the interop scripts: one "ok <check>" / "fail <check>: <why>" line per check, timeouts,
// and a query that collects stored events up to EOSE.
let failures = 0;

export function check(name, condition, why = '') {
  if (condition) console.log(`ok ${name}`);
  else {
    failures++;
    console.log(`fail ${name}: ${why}`);
  }
}

export function withTimeout(promise, ms, what) {
  return Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`timeout: ${what}`)), ms))]);
}

export function collect(relay, filters) {
  return withTimeout(new Promise((resolve) => {
    const events = [];
    const sub = relay.subscribe(filters, {
      onevent: (ev) => events.push(ev),
      oneose: () => { sub.close(); resolve(events); },
    });
  }), 5000, 'query');
}

/** Exits 0 when every check passed. */
export function finish() {
  process.exit(failures === 0 ? 0 : 1);
}
