// The atomic writer: kubelet-style layout, modes, change detection, cleanup, and the
// property that matters: a concurrent reader (a separate process) never sees a partial
// file or a mix of two generations while the writer swaps hundreds of times.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { FileSet } from '../../injector/render.js';
import { AtomicWriter, DATA_LINK, hashFileSet } from '../../injector/write.js';

const logger = pino({ level: 'silent' });
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

async function tmp(tt: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'esi-write-'));
  tt.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'out');
}

const generations = async (dir: string): Promise<string[]> =>
  (await readdir(dir)).filter((n) => n.startsWith('..') && n !== DATA_LINK).sort();

t.test('layout, modes and change detection', async (tt) => {
  const dir = await tmp(tt);
  const old = process.umask(0o077); // the configured mode must win over the umask
  tt.teardown(() => void process.umask(old));
  const w = new AtomicWriter(dir, 0o440, logger);
  await w.init();
  const files: FileSet = new Map([
    ['db/password', enc('pw1')],
    ['db/user', enc('bob')],
    ['app.conf', enc('x=1\n')],
  ]);
  const r1 = await w.write(files);
  tt.same({ changed: r1.changed, replaced: r1.replaced }, { changed: true, replaced: false });
  tt.match(r1.generation, /^\.\.\d{4}_\d\d_\d\dT\d\d_\d\d_\d\d_\d{3}Z\.[0-9a-f]{8}$/);
  tt.equal(await readlink(join(dir, DATA_LINK)), r1.generation);
  tt.equal(await readlink(join(dir, 'db')), '..data/db');
  tt.equal(await readlink(join(dir, 'app.conf')), '..data/app.conf');
  tt.equal(await readFile(join(dir, 'db/password'), 'utf8'), 'pw1');
  tt.equal((await stat(join(dir, 'db/password'))).mode & 0o777, 0o440);
  tt.equal((await stat(join(dir, 'app.conf'))).mode & 0o777, 0o440);
  tt.equal((await stat(join(dir, r1.generation))).mode & 0o777, 0o750);
  tt.equal((await stat(join(dir, 'db'))).mode & 0o777, 0o750);

  const same = await w.write(new Map([...files].reverse()));
  tt.same({ changed: same.changed, generation: same.generation }, { changed: false, generation: r1.generation }, 'same content: no swap');

  const r2 = await w.write(new Map([['db/password', enc('pw2')], ['db/user', enc('bob')]]));
  tt.same({ changed: r2.changed, replaced: r2.replaced }, { changed: true, replaced: true });
  tt.equal(await readFile(join(dir, 'db/password'), 'utf8'), 'pw2');
  await tt.rejects(lstat(join(dir, 'app.conf')), { code: 'ENOENT' }, 'vanished name: link removed');
  tt.same(await generations(dir), [r1.generation, r2.generation].sort(), 'previous generation kept for readers');

  const r3 = await w.write(new Map([['db/password', enc('pw3')]]));
  tt.same(await generations(dir), [r2.generation, r3.generation].sort(), 'older generations removed');
});

t.test('init adopts an existing generation and cleans leftovers', async (tt) => {
  const dir = await tmp(tt);
  const files: FileSet = new Map([['s/k', enc('v')]]);
  const first = new AtomicWriter(dir, 0o400, logger);
  await first.init();
  const r1 = await first.write(files);
  await symlink('nowhere', join(dir, '..data_tmp'));
  const second = new AtomicWriter(dir, 0o400, logger);
  await second.init();
  await tt.rejects(lstat(join(dir, '..data_tmp')), { code: 'ENOENT' });
  const r2 = await second.write(files);
  tt.same({ changed: r2.changed, generation: r2.generation }, { changed: false, generation: r1.generation }, 'identical content is not rewritten');
  const third = new AtomicWriter(dir, 0o440, logger);
  await third.init();
  tt.equal((await third.write(files)).changed, true, 'a different mode is a change');
  tt.equal((await stat(join(dir, 's/k'))).mode & 0o777, 0o440);
});

t.test('a non-symlink entry in the way is an error', async (tt) => {
  const dir = await tmp(tt);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'db'), 'not mine');
  const w = new AtomicWriter(dir, 0o400, logger);
  await w.init();
  await tt.rejects(w.write(new Map([['db/k', enc('v')]])), /output entry "db" exists and is not a symlink/);
});

t.test('hash covers names, contents and mode', async (tt) => {
  const a: FileSet = new Map([['x/a', enc('1')]]);
  tt.equal(hashFileSet(a, 0o400), hashFileSet(new Map([['x/a', enc('1')]]), 0o400));
  tt.not(hashFileSet(a, 0o400), hashFileSet(a, 0o440));
  tt.not(hashFileSet(a, 0o400), hashFileSet(new Map([['x/b', enc('1')]]), 0o400));
  tt.not(hashFileSet(a, 0o400), hashFileSet(new Map([['x/a', enc('2')]]), 0o400));
});

// The reader: a separate process that resolves `..data` once per pass and reads every
// file of that generation, and also reads each file through the stable top-level links.
// Every file of generation N reads `gen:N:` followed by a length that depends on N and
// the file, so a torn or truncated write is detectable.
const READER = String.raw`
const fs = require('fs'), path = require('path');
const dir = process.env.DIR, names = JSON.parse(process.env.NAMES);
const s = { passes: 0, consistent: 0, mixed: 0, partial: 0, vanished: 0, noData: 0, linkReads: 0, linkPartial: 0 };
const len = (n, i) => 1000 + ((n * 7919 + i * 104729) % 30000);
const parse = (text, i) => { const m = /^gen:(\d+):(x*)$/.exec(text); return m && m[2].length === len(Number(m[1]), i) ? Number(m[1]) : -1; };
while (!fs.existsSync(dir + '.stop')) {
  s.passes++;
  let gen;
  // The link itself must always exist; its target may be removed by a later swap while
  // this (possibly descheduled) reader resolves it, which is a vanished generation.
  try { gen = fs.realpathSync(path.join(dir, '..data')); } catch {
    try { fs.lstatSync(path.join(dir, '..data')); s.vanished++; } catch { s.noData++; }
    continue;
  }
  const seen = [];
  try { names.forEach((n, i) => seen.push(parse(fs.readFileSync(path.join(gen, n), 'utf8'), i))); }
  catch (e) { if (e.code === 'ENOENT') { s.vanished++; continue; } throw e; }
  if (seen.includes(-1)) s.partial++;
  else if (new Set(seen).size > 1) s.mixed++;
  else s.consistent++;
  names.forEach((n, i) => { try { s.linkReads++; if (parse(fs.readFileSync(path.join(dir, n), 'utf8'), i) < 0) s.linkPartial++; } catch (e) { if (e.code !== 'ENOENT') throw e; } });
}
process.stdout.write(JSON.stringify(s));
`;

t.test('a concurrent reader never sees a partial or mixed set (250 swaps)', async (tt) => {
  const dir = await tmp(tt);
  const names = ['db/password', 'db/user', 'api/token', 'app.conf'];
  const len = (n: number, i: number): number => 1000 + ((n * 7919 + i * 104729) % 30000);
  const gen = (n: number): FileSet => {
    const files: FileSet = new Map(names.map((name, i) => [name, enc(`gen:${n}:${'x'.repeat(len(n, i))}`)]));
    if (n % 2 === 0) files.set('extra', enc(`gen:${n}`)); // names come and go too
    return files;
  };
  const w = new AtomicWriter(dir, 0o440, logger);
  await w.init();
  await w.write(gen(0));
  const reader = spawn(process.execPath, ['-e', READER], { env: { ...process.env, DIR: dir, NAMES: JSON.stringify(names) } });
  let out = '';
  let err = '';
  reader.stdout.on('data', (d: Buffer) => (out += d));
  reader.stderr.on('data', (d: Buffer) => (err += d));
  const exited = new Promise<number | null>((resolve) => reader.on('exit', resolve));
  await new Promise((r) => setTimeout(r, 100)); // let the reader start reading
  const SWAPS = 250;
  for (let n = 1; n <= SWAPS; n++) {
    const r = await w.write(gen(n));
    if (!r.changed) tt.fail(`generation ${n} was not written`);
    if (n % 25 === 0) await new Promise((r) => setTimeout(r, 5)); // vary the interleaving
  }
  await new Promise((r) => setTimeout(r, 50));
  await writeFile(`${dir}.stop`, '');
  tt.equal(await exited, 0, `reader exits cleanly ${err}`);
  const s = JSON.parse(out) as Record<string, number>;
  tt.comment(`reader: ${out}`);
  tt.equal(s.partial, 0, 'no partial file in a resolved generation');
  tt.equal(s.mixed, 0, 'no mixed generation');
  tt.equal(s.linkPartial, 0, 'no partial file through the top-level links');
  tt.equal(s.noData, 0, '..data always resolves');
  tt.ok(s.consistent! >= 50, `many consistent reads (${s.consistent})`);
  tt.equal(await readFile(join(dir, 'db/user'), 'utf8'), `gen:${SWAPS}:${'x'.repeat(len(SWAPS, 1))}`);
  tt.ok((await generations(dir)).length <= 2, 'at most two generations left');
});
