// Change notifications: a real local HTTP server receives the reload request (with
// retries while it fails); non-loopback targets are refused; a real process found by
// name receives the signal.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { isLoopbackHost } from '../../injector/config.js';
import { createNotifier, findProcesses, sendHttp } from '../../injector/notify.js';

const logger = pino({ level: 'silent' });

async function reloadServer(tt: Test, failFirst = 0): Promise<{ url: string; hits: IncomingMessage[] }> {
  const hits: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    hits.push(req);
    res.statusCode = hits.length <= failFirst ? 503 : 204;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  tt.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/-/reload?x=1`, hits };
}

t.test('loopback check', async (tt) => {
  for (const h of ['localhost', '127.0.0.1', '127.1.2.3', '::1', '[::1]', 'LOCALHOST']) tt.ok(isLoopbackHost(h), h);
  for (const h of ['10.0.0.1', 'example.com', 'localhost.evil.com', '0.0.0.0', '169.254.169.254', '::', '128.0.0.1']) {
    tt.notOk(isLoopbackHost(h), h);
  }
});

t.test('HTTP reload reaches a local server', async (tt) => {
  const { url, hits } = await reloadServer(tt);
  const results: boolean[] = [];
  const n = createNotifier({ type: 'http', url, method: 'POST' }, { logger, onResult: (ok) => results.push(ok) });
  n.notify();
  await n.idle();
  tt.equal(hits.length, 1);
  tt.equal(hits[0]!.method, 'POST');
  tt.equal(hits[0]!.url, '/-/reload?x=1');
  tt.same(results, [true]);
  await n.close();
});

t.test('HTTP reload is retried with backoff until it succeeds', async (tt) => {
  const { url, hits } = await reloadServer(tt, 2);
  const results: boolean[] = [];
  const n = createNotifier({ type: 'http', url, method: 'PUT' }, { logger, baseDelayMs: 10, onResult: (ok) => results.push(ok) });
  const started = Date.now();
  n.notify();
  await n.idle();
  tt.equal(hits.length, 3, 'two failures, then success');
  tt.ok(Date.now() - started >= 30, 'waited 10 + 20 ms between attempts');
  tt.same(results, [true]);
  await n.close();
});

t.test('notify never blocks and gives up after the attempts', async (tt) => {
  const results: boolean[] = [];
  // A closed port on loopback: every attempt fails fast.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const n = createNotifier(
    { type: 'http', url: `http://localhost:${port}/reload`, method: 'POST' },
    { logger, baseDelayMs: 5, maxAttempts: 3, onResult: (ok) => results.push(ok) },
  );
  const t0 = performance.now();
  n.notify();
  tt.ok(performance.now() - t0 < 5, 'notify() returns at once');
  await n.idle();
  tt.same(results, [false]);
  await n.close();
});

t.test('non-loopback URLs are refused', async (tt) => {
  await tt.rejects(sendHttp('http://10.1.2.3/reload', 'POST', 100), /refusing non-loopback onChange host "10\.1\.2\.3"/);
  await tt.rejects(sendHttp('http://example.com/reload', 'POST', 100), /non-loopback/);
  await tt.rejects(sendHttp('https://127.0.0.1/reload', 'POST', 100), /must be http/);
});

t.test('signal to a process found by name in /proc', { skip: process.platform !== 'linux' && 'needs /proc' }, async (tt) => {
  const name = `esi-test-app-${randomBytes(3).toString('hex')}`;
  // argv0 sets the process's argv[0], which is what /proc/<pid>/cmdline shows.
  const child = spawn(process.execPath, ['-e', "process.on('SIGHUP', () => { process.stdout.write('reloaded'); process.exit(0); }); setInterval(() => {}, 1000); process.stdout.write('up');"], {
    argv0: name,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  tt.teardown(() => void child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  await new Promise<void>((r) => child.stdout.once('data', () => r()));
  tt.same(await findProcesses(name), [child.pid]);
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  const results: boolean[] = [];
  const n = createNotifier({ type: 'signal', process: name, signal: 'SIGHUP' }, { logger, onResult: (ok) => results.push(ok) });
  n.notify();
  await n.idle();
  tt.equal(await exited, 0);
  tt.match(out, /reloaded/);
  tt.same(results, [true]);
  await n.close();
});

t.test('signal: no such process fails after retries', async (tt) => {
  const results: boolean[] = [];
  const n = createNotifier(
    { type: 'signal', process: `no-such-process-${randomBytes(4).toString('hex')}`, signal: 'SIGHUP' },
    { logger, baseDelayMs: 1, maxAttempts: 2, onResult: (ok) => results.push(ok) },
  );
  n.notify();
  await n.idle();
  tt.same(results, [false]);
  await n.close();
});
