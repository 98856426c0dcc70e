// What the Node benchmarks under tests/load share: `--key value` options over defaults (numbers
// stay numbers), the ws module from tests/interop, and a relay's CPU time from /proc.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const requireInterop = createRequire(join(here, '..', 'interop', 'package.json'));

/** `defaults` overridden by argv's `--key value` pairs; exits 2 with `usage` on an unknown key or a missing --url. */
export function parseOptions(defaults, usage) {
  const opt = { ...defaults };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in opt) || i + 1 >= argv.length) {
      console.error(`unknown option or missing value: ${argv[i]}`);
      process.exit(2);
    }
    opt[key] = typeof opt[key] === 'number' ? Number(argv[++i]) : argv[++i];
  }
  if ('url' in opt && !opt.url) {
    console.error(usage);
    process.exit(2);
  }
  return opt;
}

/** utime + stime of a process, in ms (clock ticks of 10 ms, USER_HZ 100). */
export function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
