// What the Node benchmarks under tests/load share: `--key value` options over defaults (numbers
// stay numbers), the ws module from tests/interop, a process's CPU time from /proc, percentiles.
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

/** Fields 3.. of /proc/PID/stat (after the command name), so fields[0] is the state, [1] the ppid. */
export function procStat(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime + stime of a process, in ms (clock ticks of 10 ms, USER_HZ 100). */
export function cpuMs(pid) {
  const fields = procStat(pid);
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** cutime + cstime of a process, in ms: what its children (and theirs) spent, once reaped. */
export function childrenCpuMs(pid) {
  const fields = procStat(pid);
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/** The p-th percentile (nearest rank) of an ascending array. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
