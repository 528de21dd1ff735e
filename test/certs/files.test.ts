// File-based TLS source: kubelet-style symlink swaps and in-place rewrites reload the
// material; a mismatched pair keeps the old material in service.
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { fileTlsSource, loadTlsFiles } from '../../certs/files.js';
import { generateCa, issueServingCert, parseCert, type KeyPair } from '../../certs/pki.js';
import type { TlsMaterial } from '../../certs/tls-source.js';

const logger = pino({ level: 'silent' });
const identity = { dnsNames: ['localhost'], ips: ['127.0.0.1'] };

async function pair(): Promise<{ ca: KeyPair; leaf: KeyPair }> {
  const ca = await generateCa(Date.now(), 3_600_000);
  return { ca, leaf: await issueServingCert(ca, identity, Date.now(), 600_000) };
}

/** Writes one kubelet "generation": ..<n>/{tls.crt,tls.key,ca.crt}, swapped in via ..data. */
async function publishGeneration(dir: string, n: number, files: Record<string, string>): Promise<void> {
  const gen = join(dir, `..gen_${n}`);
  await mkdir(gen);
  for (const [name, body] of Object.entries(files)) await writeFile(join(gen, name), body);
  await symlink(`..gen_${n}`, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data')); // atomic, like kubelet
}

function nextChange(changes: TlsMaterial[], timeoutMs = 5000): Promise<TlsMaterial> {
  const seen = changes.length;
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const iv = setInterval(() => {
      const m = changes[seen];
      if (m) { clearInterval(iv); resolve(m); }
      else if (Date.now() - started > timeoutMs) { clearInterval(iv); reject(new Error('no onChange')); }
    }, 20);
  });
}

const serial = (pem: string): string | undefined => parseCert(pem)?.serial;

t.test('kubelet-style symlink swap reloads; a bad pair keeps the old material', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'esi-certs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const a = await pair();
  const b = await pair();
  await publishGeneration(dir, 1, { 'tls.crt': a.leaf.certPem, 'tls.key': a.leaf.keyPem, 'ca.crt': a.ca.certPem });
  for (const f of ['tls.crt', 'tls.key', 'ca.crt']) await symlink(join('..data', f), join(dir, f));

  const src = await fileTlsSource({
    certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), caFile: join(dir, 'ca.crt'),
    logger, debounceMs: 50, pollIntervalMs: 60_000,
  });
  t.teardown(() => src.stop());
  t.ok(src.ready());
  t.equal(serial(src.current().certPem), serial(a.leaf.certPem));
  t.equal(src.current().caPem, a.ca.certPem);
  const changes: TlsMaterial[] = [];
  src.onChange((m) => changes.push(m));

  const changed = nextChange(changes);
  await publishGeneration(dir, 2, { 'tls.crt': b.leaf.certPem, 'tls.key': b.leaf.keyPem, 'ca.crt': b.ca.certPem });
  const m = await changed;
  t.equal(serial(m.certPem), serial(b.leaf.certPem), 'onChange carries the new cert');
  t.equal(serial(src.current().certPem), serial(b.leaf.certPem), 'current() is the new cert');
  t.equal(m.caPem, b.ca.certPem);

  // Cert of one pair with the key of another: must not be served.
  await publishGeneration(dir, 3, { 'tls.crt': a.leaf.certPem, 'tls.key': b.leaf.keyPem, 'ca.crt': a.ca.certPem });
  await new Promise((r) => setTimeout(r, 1500)); // debounce + retries
  t.equal(changes.length, 1, 'no onChange for an invalid pair');
  t.equal(serial(src.current().certPem), serial(b.leaf.certPem), 'still serving the previous cert');

  const fixed = nextChange(changes);
  await publishGeneration(dir, 4, { 'tls.crt': a.leaf.certPem, 'tls.key': a.leaf.keyPem, 'ca.crt': a.ca.certPem });
  t.equal(serial((await fixed).certPem), serial(a.leaf.certPem), 'a valid pair afterwards is picked up');
});

t.test('plain in-place rewrite reloads; polling catches changes too', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'esi-certs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const a = await pair();
  const b = await pair();
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  await writeFile(certFile, a.leaf.certPem);
  await writeFile(keyFile, a.leaf.keyPem);
  const src = await fileTlsSource({ certFile, keyFile, logger, debounceMs: 50, pollIntervalMs: 500 });
  t.teardown(() => src.stop());
  t.equal(src.current().caPem, '', 'no CA file, empty bundle');
  const changes: TlsMaterial[] = [];
  src.onChange((m) => changes.push(m));
  const changed = nextChange(changes);
  // Key first, then cert: the source sees a mismatched pair in between and must wait it out.
  await writeFile(keyFile, b.leaf.keyPem);
  await new Promise((r) => setTimeout(r, 100));
  await writeFile(certFile, b.leaf.certPem);
  t.equal(serial((await changed).certPem), serial(b.leaf.certPem));
  t.equal(changes.length, 1);
});

t.test('invalid files at start are refused with a clear message', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'esi-certs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const a = await pair();
  const b = await pair();
  await writeFile(join(dir, 'c'), a.leaf.certPem);
  await writeFile(join(dir, 'k'), b.leaf.keyPem);
  await writeFile(join(dir, 'junk'), 'not a cert');
  await t.rejects(loadTlsFiles({ certFile: join(dir, 'c'), keyFile: join(dir, 'k') }), /is not the private key/);
  await t.rejects(loadTlsFiles({ certFile: join(dir, 'junk'), keyFile: join(dir, 'k') }), /does not hold a PEM certificate/);
  await t.rejects(fileTlsSource({ certFile: join(dir, 'missing'), keyFile: join(dir, 'k'), logger }), /ENOENT/);
});
