// The smallest web server that runs `git http-backend` as a CGI program, as a baseline for
// graspd's git hosting in tests/bench/git_clone_bench.mjs. One `git http-backend` per request,
// request body streamed to its stdin, its stdout streamed back after the CGI header block.
//
//   node tests/bench/git_cgi_server.mjs --root GIT_PROJECT_ROOT --port P
//
// Every repository under --root is exported (GIT_HTTP_EXPORT_ALL). The process reaps its git
// children, so /proc/<pid>/stat's cutime+cstime holds the CPU they spent.
import http from 'node:http';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseOptions } from '../load/bench_common.mjs';

const opt = parseOptions({ root: '', port: 0 }, 'usage: git_cgi_server.mjs --root DIR --port P');
if (!opt.root || !opt.port) {
  console.error('usage: git_cgi_server.mjs --root DIR --port P');
  process.exit(2);
}
// git reads no user or system configuration: a HOME of its own, as graspd gives its git.
const home = mkdtempSync(join(tmpdir(), 'git-cgi-home-'));

/** The CGI/1.1 environment of one request (RFC 3875 §4.1), every request header as HTTP_*. */
function cgiEnvironment(req) {
  const url = new URL(req.url, 'http://localhost');
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_PROJECT_ROOT: opt.root,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
    SERVER_SOFTWARE: 'git_cgi_server.mjs',
    REQUEST_METHOD: req.method,
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    REMOTE_ADDR: req.socket.remoteAddress || '',
  };
  if (req.headers['content-type']) env.CONTENT_TYPE = req.headers['content-type'];
  if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
  for (const [name, value] of Object.entries(req.headers)) {
    env[`HTTP_${name.toUpperCase().replace(/-/g, '_')}`] = Array.isArray(value) ? value.join(', ') : value;
  }
  return env;
}

/** Splits git's output at the end of the CGI header block; null until it has arrived. */
function headerEnd(buffer) {
  const crlf = buffer.indexOf('\r\n\r\n');
  const lf = buffer.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { at: crlf, length: 4 };
  return lf >= 0 ? { at: lf, length: 2 } : null;
}

function respond(res, head) {
  let status = 200;
  for (const line of head.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') status = parseInt(value, 10) || 500;
    else res.setHeader(name, value);
  }
  res.writeHead(status);
}

http
  .createServer((req, res) => {
    const git = spawn('git', ['http-backend'], { env: cgiEnvironment(req), stdio: ['pipe', 'pipe', 'inherit'] });
    req.pipe(git.stdin);
    git.stdin.on('error', () => {}); // git may exit before reading the whole body
    let pending = Buffer.alloc(0);
    let started = false;
    const onHead = (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      const end = headerEnd(pending);
      if (!end) return;
      started = true;
      git.stdout.off('data', onHead);
      respond(res, pending.subarray(0, end.at).toString('latin1'));
      res.write(pending.subarray(end.at + end.length));
      git.stdout.pipe(res);
    };
    git.stdout.on('data', onHead);
    git.on('close', () => {
      if (!started) {
        res.writeHead(502);
        res.end();
      }
    });
    // A client that went away: stop its git (a finished response leaves git to exit by itself).
    res.on('close', () => {
      if (!res.writableFinished && git.exitCode === null) git.kill('SIGKILL');
    });
  })
  .listen(opt.port, '127.0.0.1', () => console.error(`git_cgi_server listening on 127.0.0.1:${opt.port}`));
